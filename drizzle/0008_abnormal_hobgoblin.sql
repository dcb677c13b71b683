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
ALTER TABLE `agent_sessions` ADD `tool_approval` text DEFAULT '"never"' NOT NULL;