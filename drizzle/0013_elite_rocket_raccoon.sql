ALTER TABLE `catalog_works` ADD `overview` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `catalog_works` ADD `genres` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `catalog_works` ADD `search_text` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `catalog_works` ADD `genre_key` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `catalog_works` ADD `poster` text;--> statement-breakpoint
ALTER TABLE `catalog_works` ADD `backdrop` text;--> statement-breakpoint
CREATE INDEX `catalog_works_kind_year` ON `catalog_works` (`kind`,`year`);