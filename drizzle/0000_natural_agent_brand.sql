CREATE TABLE `catalog_assets` (
	`id` text PRIMARY KEY NOT NULL,
	`edition_id` text NOT NULL,
	`root` integer NOT NULL,
	`path` text NOT NULL,
	`container` text NOT NULL,
	`fast_hash` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`identification` text NOT NULL,
	`kind` text NOT NULL,
	`layout` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`edition_id`) REFERENCES `catalog_editions`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `catalog_assets_location` ON `catalog_assets` (`root`,`path`);--> statement-breakpoint
CREATE INDEX `catalog_assets_edition` ON `catalog_assets` (`edition_id`);--> statement-breakpoint
CREATE TABLE `catalog_editions` (
	`id` text PRIMARY KEY NOT NULL,
	`work_id` text,
	`kind` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`work_id`) REFERENCES `catalog_works`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `catalog_editions_work` ON `catalog_editions` (`work_id`,`kind`);--> statement-breakpoint
CREATE TABLE `catalog_media_indexes` (
	`id` text PRIMARY KEY NOT NULL,
	`asset_id` text NOT NULL,
	`container` text NOT NULL,
	`bitrate_bps` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`capabilities` text NOT NULL,
	`keyframes_ms` text NOT NULL,
	`keyframe_source` text NOT NULL,
	`streams` text NOT NULL,
	`index_version` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`asset_id`) REFERENCES `catalog_assets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `catalog_media_indexes_asset_id_unique` ON `catalog_media_indexes` (`asset_id`);--> statement-breakpoint
CREATE TABLE `catalog_relations` (
	`parent_work_id` text NOT NULL,
	`child_work_id` text NOT NULL,
	`rel` text NOT NULL,
	`ordinal` text NOT NULL,
	`ordinal_key` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`parent_work_id`) REFERENCES `catalog_works`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`child_work_id`) REFERENCES `catalog_works`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `catalog_relations_pair` ON `catalog_relations` (`parent_work_id`,`child_work_id`,`rel`);--> statement-breakpoint
CREATE INDEX `catalog_relations_child` ON `catalog_relations` (`child_work_id`);--> statement-breakpoint
CREATE TABLE `catalog_works` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`title` text NOT NULL,
	`original_title` text NOT NULL,
	`year` integer NOT NULL,
	`match_key` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `catalog_works_match_key` ON `catalog_works` (`match_key`);--> statement-breakpoint
CREATE INDEX `catalog_works_created` ON `catalog_works` (`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `identity_actors` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`policies` text NOT NULL,
	`disabled` integer DEFAULT false NOT NULL,
	`api_key_hash` text NOT NULL,
	`api_key_hint` text NOT NULL,
	`key_version` integer DEFAULT 1 NOT NULL,
	`policies_version` integer DEFAULT 1 NOT NULL,
	`key_rotated_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `identity_actors_api_key_hash_unique` ON `identity_actors` (`api_key_hash`);--> statement-breakpoint
CREATE TABLE `identity_refresh_tokens` (
	`hash` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	FOREIGN KEY (`session_id`) REFERENCES `identity_sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `identity_refresh_tokens_session_idx` ON `identity_refresh_tokens` (`session_id`);--> statement-breakpoint
CREATE TABLE `identity_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`actor_id` text NOT NULL,
	`key_version` integer NOT NULL,
	`policies_version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`refreshed_at` integer,
	`revoked_at` integer,
	`end_reason` text,
	FOREIGN KEY (`actor_id`) REFERENCES `identity_actors`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `identity_sessions_actor_idx` ON `identity_sessions` (`actor_id`);--> statement-breakpoint
CREATE INDEX `identity_sessions_expires_idx` ON `identity_sessions` (`expires_at`);--> statement-breakpoint
CREATE TABLE `workspaces_workspaces` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`owner` text NOT NULL,
	`template` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`port` integer NOT NULL,
	`ssh_port` integer NOT NULL,
	`rdp_port` integer NOT NULL,
	`container_id` text,
	`volume` text NOT NULL,
	`provisioned` integer DEFAULT false NOT NULL,
	`repo_url` text,
	`repo_branch` text,
	`reason` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_workspaces_name_unique` ON `workspaces_workspaces` (`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_workspaces_port_unique` ON `workspaces_workspaces` (`port`);--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_workspaces_ssh_port_unique` ON `workspaces_workspaces` (`ssh_port`);--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_workspaces_rdp_port_unique` ON `workspaces_workspaces` (`rdp_port`);--> statement-breakpoint
CREATE INDEX `workspaces_workspaces_owner_idx` ON `workspaces_workspaces` (`owner`,`created_at`);