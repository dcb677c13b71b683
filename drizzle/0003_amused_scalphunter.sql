CREATE TABLE `webhooks_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_seq` integer NOT NULL,
	`attempt` integer NOT NULL,
	`started_at` text NOT NULL,
	`duration_ms` integer NOT NULL,
	`response_status` integer,
	`error` text,
	`response_body` text,
	FOREIGN KEY (`delivery_seq`) REFERENCES `webhooks_deliveries`(`seq`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhooks_attempts_delivery_idx` ON `webhooks_attempts` (`delivery_seq`,`attempt`);--> statement-breakpoint
CREATE TABLE `webhooks_deliveries` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`registration_id` text NOT NULL,
	`event` text NOT NULL,
	`order_key` text,
	`head` integer DEFAULT true NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`round_attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`lease_until` integer,
	`response_status` integer,
	`last_error` text,
	`last_duration_ms` integer,
	`created_at` text NOT NULL,
	`last_attempt_at` text,
	`delivered_at` text,
	FOREIGN KEY (`registration_id`) REFERENCES `webhooks_registrations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhooks_deliveries_id_unique` ON `webhooks_deliveries` (`id`);--> statement-breakpoint
CREATE INDEX `webhooks_deliveries_due_idx` ON `webhooks_deliveries` (`next_attempt_at`) WHERE status = 'pending' AND head = 1;--> statement-breakpoint
CREATE INDEX `webhooks_deliveries_order_idx` ON `webhooks_deliveries` (`registration_id`,`order_key`,`seq`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `webhooks_deliveries_log_idx` ON `webhooks_deliveries` (`registration_id`,`seq`);--> statement-breakpoint
CREATE TABLE `webhooks_registrations` (
	`id` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`all_workspaces` integer DEFAULT false NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`secret` text NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`disabled_reason` text,
	`disabled_at` text,
	`failing_since` integer,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhooks_registrations_owner_idx` ON `webhooks_registrations` (`owner`,`created_at`);