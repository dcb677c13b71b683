CREATE TABLE `playback_progress` (
	`actor_id` text NOT NULL,
	`asset_id` text NOT NULL,
	`position_ms` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`played` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`actor_id`, `asset_id`)
);
--> statement-breakpoint
CREATE INDEX `playback_progress_recent` ON `playback_progress` (`actor_id`,`updated_at`);