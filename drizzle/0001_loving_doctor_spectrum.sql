CREATE TABLE `workspaces_retained_volumes` (
	`volume` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`owner` text NOT NULL,
	`deleted_at` text NOT NULL
);
