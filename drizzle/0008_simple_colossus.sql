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