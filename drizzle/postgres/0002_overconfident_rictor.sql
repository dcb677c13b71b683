ALTER TABLE "catalog_works" ADD COLUMN "overview" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "catalog_works" ADD COLUMN "genres" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "catalog_works" ADD COLUMN "search_text" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "catalog_works" ADD COLUMN "genre_key" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "catalog_works" ADD COLUMN "poster" jsonb;--> statement-breakpoint
ALTER TABLE "catalog_works" ADD COLUMN "backdrop" jsonb;--> statement-breakpoint
CREATE INDEX "catalog_works_kind_year" ON "catalog_works" USING btree ("kind","year");