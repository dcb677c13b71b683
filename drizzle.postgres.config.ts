import { defineConfig } from 'drizzle-kit';

// The same tables as drizzle.config.ts, built for PostgreSQL (APP_DATABASE_URL=postgres://...).
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/platform/postgres-tables.ts',
  out: './drizzle/postgres',
});
