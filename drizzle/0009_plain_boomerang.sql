CREATE TABLE `agent_approvals` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`message_id` text NOT NULL,
	`tool_call_id` text NOT NULL,
	`name` text NOT NULL,
	`input` text NOT NULL,
	`status` text NOT NULL,
	`reason` text,
	`decided_by` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`decided_at` text,
	FOREIGN KEY (`session_id`) REFERENCES `agent_sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `agent_approvals_session_idx` ON `agent_approvals` (`session_id`,`status`);--> statement-breakpoint
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
CREATE INDEX `usage_running_open_idx` ON `usage_running` (`workspace_id`,`ended_at`);--> statement-breakpoint
ALTER TABLE `agent_sessions` ADD `tool_approval` text DEFAULT '"never"' NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_sessions` ADD `mcp_servers` text DEFAULT '[]' NOT NULL;