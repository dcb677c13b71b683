ALTER TABLE `workspaces_workspaces` ADD `auto_stop_minutes` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces_workspaces` ADD `stop_reason` text;