CREATE TABLE `usage_exec` (
	`id` text PRIMARY KEY NOT NULL,
	`actor` text NOT NULL,
	`workspace_id` text NOT NULL,
	`duration_ms` integer NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `usage_exec_actor_at_idx` ON `usage_exec` (`actor`,`at`);--> statement-breakpoint
CREATE TABLE `usage_running` (
	`id` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`workspace_id` text NOT NULL,
	`started_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `usage_running_owner_idx` ON `usage_running` (`owner`,`started_at`);--> statement-breakpoint
CREATE INDEX `usage_running_open_idx` ON `usage_running` (`workspace_id`,`ended_at`);