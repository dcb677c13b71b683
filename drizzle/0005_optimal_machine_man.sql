CREATE TABLE `agent_usage` (
	`id` text PRIMARY KEY NOT NULL,
	`actor` text NOT NULL,
	`session_id` text NOT NULL,
	`model` text NOT NULL,
	`input_tokens` integer NOT NULL,
	`output_tokens` integer NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `agent_usage_actor_at_idx` ON `agent_usage` (`actor`,`at`);