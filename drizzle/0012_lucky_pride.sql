CREATE TABLE `playback_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`actor_id` text NOT NULL,
	`identity_session_id` text NOT NULL,
	`asset_id` text NOT NULL,
	`mode` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`ended_at` integer
);
--> statement-breakpoint
CREATE INDEX `playback_sessions_expires_idx` ON `playback_sessions` (`expires_at`);