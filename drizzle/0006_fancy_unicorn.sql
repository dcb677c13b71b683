CREATE TABLE `catalog_event_outbox` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event_id` text NOT NULL,
	`subject` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`sent_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `catalog_event_outbox_event_id_unique` ON `catalog_event_outbox` (`event_id`);--> statement-breakpoint
CREATE INDEX `catalog_event_outbox_unsent_idx` ON `catalog_event_outbox` (`sent_at`,`seq`);--> statement-breakpoint
CREATE TABLE `webhooks_event_inbox` (
	`event_id` text PRIMARY KEY NOT NULL,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `workspaces_event_outbox` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event_id` text NOT NULL,
	`subject` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`sent_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_event_outbox_event_id_unique` ON `workspaces_event_outbox` (`event_id`);--> statement-breakpoint
CREATE INDEX `workspaces_event_outbox_unsent_idx` ON `workspaces_event_outbox` (`sent_at`,`seq`);