CREATE TABLE `workspaces_activity` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`last_activity_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `workspaces_previews` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`owner` text NOT NULL,
	`port` integer NOT NULL,
	`token_hash` text NOT NULL,
	`url` text NOT NULL,
	`expires_at` text NOT NULL,
	`revoked_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_previews_token_hash_unique` ON `workspaces_previews` (`token_hash`);--> statement-breakpoint
CREATE INDEX `workspaces_previews_workspace_idx` ON `workspaces_previews` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `workspaces_processes` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`owner` text NOT NULL,
	`name` text,
	`command` text NOT NULL,
	`status` text NOT NULL,
	`exit_code` integer,
	`started_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `workspaces_processes_workspace_idx` ON `workspaces_processes` (`workspace_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `workspaces_processes_status_idx` ON `workspaces_processes` (`status`);