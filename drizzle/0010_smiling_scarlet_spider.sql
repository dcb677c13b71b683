CREATE TABLE `workspaces_snapshots` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`owner` text NOT NULL,
	`workspace_id` text NOT NULL,
	`template` text NOT NULL,
	`image` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workspaces_snapshots_owner_idx` ON `workspaces_snapshots` (`owner`,`created_at`);--> statement-breakpoint
ALTER TABLE `workspaces_workspaces` ADD `auto_stop_minutes` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces_workspaces` ADD `stop_reason` text;--> statement-breakpoint
ALTER TABLE `workspaces_workspaces` ADD `snapshot_id` text;