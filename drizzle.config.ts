import { defineConfig } from 'drizzle-kit';

// One SQLite database; each service owns the tables of its own *.tables.ts file.
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/services/**/*.tables.ts',
  out: './drizzle',
});
