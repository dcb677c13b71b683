CREATE TABLE `workspaces_template_builds` (
	`id` text PRIMARY KEY NOT NULL,
	`template_id` text NOT NULL,
	`version` integer NOT NULL,
	`status` text NOT NULL,
	`reason` text,
	`log` text NOT NULL,
	`image` text NOT NULL,
	`started_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `workspaces_template_builds_template` ON `workspaces_template_builds` (`template_id`,`version`);--> statement-breakpoint
CREATE TABLE `workspaces_templates` (
	`id` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`name` text NOT NULL,
	`public` integer NOT NULL,
	`dockerfile` text NOT NULL,
	`files` text NOT NULL,
	`start_command` text,
	`ready_command` text,
	`user` text,
	`workdir` text,
	`env` text NOT NULL,
	`cpu` real,
	`memory_mb` integer,
	`status` text NOT NULL,
	`reason` text,
	`version` integer NOT NULL,
	`build_id` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`deleted_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_templates_owner_name` ON `workspaces_templates` (`owner`,`name`);