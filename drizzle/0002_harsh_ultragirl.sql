CREATE TABLE `library_files` (
	`root` integer NOT NULL,
	`path` text NOT NULL,
	`asset_id` text,
	`size_bytes` integer NOT NULL,
	`mtime_ms` integer NOT NULL,
	`available` integer NOT NULL,
	`seen_scan` text,
	`outcome` text NOT NULL,
	`checked_at` integer NOT NULL,
	FOREIGN KEY (`asset_id`) REFERENCES `catalog_assets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `library_files_location` ON `library_files` (`root`,`path`);--> statement-breakpoint
CREATE INDEX `library_files_asset` ON `library_files` (`asset_id`);--> statement-breakpoint
CREATE INDEX `library_files_scan` ON `library_files` (`seen_scan`,`outcome`);--> statement-breakpoint
CREATE TABLE `library_scans` (
	`id` text PRIMARY KEY NOT NULL,
	`job_id` text,
	`status` text NOT NULL,
	`targets` text NOT NULL,
	`counts` text,
	`error` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `library_scans_job` ON `library_scans` (`job_id`);--> statement-breakpoint
CREATE TABLE `sources_bindings` (
	`id` text PRIMARY KEY NOT NULL,
	`asset_id` text NOT NULL,
	`kind` text NOT NULL,
	`root` integer NOT NULL,
	`path` text NOT NULL,
	`available` integer NOT NULL,
	`checked_at` integer NOT NULL,
	`preference` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sources_bindings_location` ON `sources_bindings` (`asset_id`,`kind`,`root`,`path`);--> statement-breakpoint
CREATE INDEX `sources_bindings_asset` ON `sources_bindings` (`asset_id`);--> statement-breakpoint
CREATE TABLE `workers_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`key` text,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`max_attempts` integer NOT NULL,
	`run_at` integer NOT NULL,
	`lease_owner` text,
	`lease_until` integer,
	`cancel_requested` integer NOT NULL,
	`progress` text NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workers_jobs_pending_key` ON `workers_jobs` (`key`) WHERE status = 'queued';--> statement-breakpoint
CREATE INDEX `workers_jobs_claim` ON `workers_jobs` (`status`,`run_at`);