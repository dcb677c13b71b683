// Stylesheets imported by the dashboard's scripts are bundled by Bun's HTML bundler (ui.assets.ts).
declare module '*.css';
