CREATE TABLE "identity_actors" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"policies" jsonb NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"api_key_hash" text NOT NULL,
	"api_key_hint" text NOT NULL,
	"key_version" bigint DEFAULT 1 NOT NULL,
	"policies_version" bigint DEFAULT 1 NOT NULL,
	"key_rotated_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "identity_actors_api_key_hash_unique" UNIQUE("api_key_hash")
);
--> statement-breakpoint
CREATE TABLE "agent_approvals" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"message_id" text NOT NULL,
	"tool_call_id" text NOT NULL,
	"name" text NOT NULL,
	"input" text NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"decided_by" text,
	"created_at" text NOT NULL,
	"expires_at" text NOT NULL,
	"decided_at" text
);
--> statement-breakpoint
CREATE TABLE "agent_events" (
	"session_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"event" text NOT NULL,
	"data" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "agent_events_session_id_seq_pk" PRIMARY KEY("session_id","seq")
);
--> statement-breakpoint
CREATE TABLE "agent_messages" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"ordinal" bigint NOT NULL,
	"role" text NOT NULL,
	"content" text NOT NULL,
	"finish_reason" text,
	"tool_calls" text,
	"parts" text,
	"prompt_tokens" bigint,
	"completion_tokens" bigint,
	"total_tokens" bigint,
	"after_event_id" bigint,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agent_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"workspace_id" text NOT NULL,
	"model" text NOT NULL,
	"context" text NOT NULL,
	"status" text NOT NULL,
	"tool_approval" text DEFAULT '"never"' NOT NULL,
	"mcp_servers" text DEFAULT '[]' NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"total_tokens" bigint DEFAULT 0 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agent_usage" (
	"id" text PRIMARY KEY NOT NULL,
	"actor" text NOT NULL,
	"session_id" text NOT NULL,
	"model" text NOT NULL,
	"input_tokens" bigint NOT NULL,
	"output_tokens" bigint NOT NULL,
	"at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhooks_attempts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"delivery_seq" bigint NOT NULL,
	"attempt" bigint NOT NULL,
	"started_at" text NOT NULL,
	"duration_ms" bigint NOT NULL,
	"response_status" bigint,
	"error" text,
	"response_body" text
);
--> statement-breakpoint
CREATE TABLE "catalog_assets" (
	"id" text PRIMARY KEY NOT NULL,
	"edition_id" text NOT NULL,
	"root" bigint NOT NULL,
	"path" text NOT NULL,
	"container" text NOT NULL,
	"fast_hash" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"identification" text NOT NULL,
	"kind" text NOT NULL,
	"layout" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalog_editions" (
	"id" text PRIMARY KEY NOT NULL,
	"work_id" text,
	"kind" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalog_event_outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"subject" text NOT NULL,
	"payload" text NOT NULL,
	"created_at" bigint NOT NULL,
	"sent_at" bigint,
	CONSTRAINT "catalog_event_outbox_event_id_unique" UNIQUE("event_id")
);
--> statement-breakpoint
CREATE TABLE "catalog_media_indexes" (
	"id" text PRIMARY KEY NOT NULL,
	"asset_id" text NOT NULL,
	"container" text NOT NULL,
	"bitrate_bps" bigint NOT NULL,
	"duration_ms" bigint NOT NULL,
	"capabilities" jsonb NOT NULL,
	"keyframes_ms" jsonb NOT NULL,
	"keyframe_source" text NOT NULL,
	"streams" jsonb NOT NULL,
	"index_version" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "catalog_media_indexes_asset_id_unique" UNIQUE("asset_id")
);
--> statement-breakpoint
CREATE TABLE "catalog_relations" (
	"parent_work_id" text NOT NULL,
	"child_work_id" text NOT NULL,
	"rel" text NOT NULL,
	"ordinal" jsonb NOT NULL,
	"ordinal_key" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalog_works" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"title" text NOT NULL,
	"original_title" text NOT NULL,
	"year" bigint NOT NULL,
	"match_key" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhooks_deliveries" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"registration_id" text NOT NULL,
	"event" text NOT NULL,
	"order_key" text,
	"head" boolean DEFAULT true NOT NULL,
	"payload" text NOT NULL,
	"status" text NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"round_attempts" bigint DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"lease_until" bigint,
	"response_status" bigint,
	"last_error" text,
	"last_duration_ms" bigint,
	"created_at" text NOT NULL,
	"last_attempt_at" text,
	"delivered_at" text,
	CONSTRAINT "webhooks_deliveries_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "webhooks_event_inbox" (
	"event_id" text PRIMARY KEY NOT NULL,
	"received_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "library_files" (
	"root" bigint NOT NULL,
	"path" text NOT NULL,
	"asset_id" text,
	"size_bytes" bigint NOT NULL,
	"mtime_ms" bigint NOT NULL,
	"available" boolean NOT NULL,
	"seen_scan" text,
	"outcome" text NOT NULL,
	"checked_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "library_scans" (
	"id" text PRIMARY KEY NOT NULL,
	"job_id" text,
	"status" text NOT NULL,
	"targets" jsonb NOT NULL,
	"counts" jsonb,
	"error" text,
	"created_at" bigint NOT NULL,
	"started_at" bigint,
	"finished_at" bigint
);
--> statement-breakpoint
CREATE TABLE "identity_refresh_tokens" (
	"hash" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint
);
--> statement-breakpoint
CREATE TABLE "webhooks_registrations" (
	"id" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"all_workspaces" boolean DEFAULT false NOT NULL,
	"url" text NOT NULL,
	"events" jsonb NOT NULL,
	"secret" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"disabled_at" text,
	"failing_since" bigint,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workspaces_retained_volumes" (
	"volume" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"owner" text NOT NULL,
	"deleted_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "identity_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"actor_id" text NOT NULL,
	"key_version" bigint NOT NULL,
	"policies_version" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"refreshed_at" bigint,
	"revoked_at" bigint,
	"end_reason" text
);
--> statement-breakpoint
CREATE TABLE "workspaces_snapshots" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"owner" text NOT NULL,
	"workspace_id" text NOT NULL,
	"template" text NOT NULL,
	"image" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sources_bindings" (
	"id" text PRIMARY KEY NOT NULL,
	"asset_id" text NOT NULL,
	"kind" text NOT NULL,
	"root" bigint NOT NULL,
	"path" text NOT NULL,
	"available" boolean NOT NULL,
	"checked_at" bigint NOT NULL,
	"preference" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_exec" (
	"id" text PRIMARY KEY NOT NULL,
	"actor" text NOT NULL,
	"workspace_id" text NOT NULL,
	"duration_ms" bigint NOT NULL,
	"at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_running" (
	"id" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"workspace_id" text NOT NULL,
	"started_at" text NOT NULL,
	"ended_at" text
);
--> statement-breakpoint
CREATE TABLE "workers_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"key" text,
	"payload" jsonb NOT NULL,
	"status" text NOT NULL,
	"attempts" bigint NOT NULL,
	"max_attempts" bigint NOT NULL,
	"run_at" bigint NOT NULL,
	"lease_owner" text,
	"lease_until" bigint,
	"cancel_requested" boolean NOT NULL,
	"progress" jsonb NOT NULL,
	"error" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"started_at" bigint,
	"finished_at" bigint
);
--> statement-breakpoint
CREATE TABLE "workspaces_activity" (
	"workspace_id" text PRIMARY KEY NOT NULL,
	"last_activity_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workspaces_event_outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"subject" text NOT NULL,
	"payload" text NOT NULL,
	"created_at" bigint NOT NULL,
	"sent_at" bigint,
	CONSTRAINT "workspaces_event_outbox_event_id_unique" UNIQUE("event_id")
);
--> statement-breakpoint
CREATE TABLE "workspaces_previews" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"owner" text NOT NULL,
	"port" bigint NOT NULL,
	"token_hash" text NOT NULL,
	"url" text NOT NULL,
	"expires_at" text NOT NULL,
	"revoked_at" text,
	"created_at" text NOT NULL,
	CONSTRAINT "workspaces_previews_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "workspaces_processes" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"owner" text NOT NULL,
	"name" text,
	"command" text NOT NULL,
	"status" text NOT NULL,
	"exit_code" bigint,
	"started_at" text NOT NULL,
	"ended_at" text
);
--> statement-breakpoint
CREATE TABLE "workspaces_workspaces" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"owner" text NOT NULL,
	"template" text NOT NULL,
	"type" text NOT NULL,
	"status" text NOT NULL,
	"port" bigint NOT NULL,
	"ssh_port" bigint NOT NULL,
	"rdp_port" bigint NOT NULL,
	"container_id" text,
	"engine" text,
	"volume" text NOT NULL,
	"provisioned" boolean DEFAULT false NOT NULL,
	"repo_url" text,
	"repo_branch" text,
	"reason" text,
	"auto_stop_minutes" double precision DEFAULT 0 NOT NULL,
	"stop_reason" text,
	"snapshot_id" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "workspaces_workspaces_name_unique" UNIQUE("name"),
	CONSTRAINT "workspaces_workspaces_port_unique" UNIQUE("port"),
	CONSTRAINT "workspaces_workspaces_ssh_port_unique" UNIQUE("ssh_port"),
	CONSTRAINT "workspaces_workspaces_rdp_port_unique" UNIQUE("rdp_port")
);
--> statement-breakpoint
ALTER TABLE "agent_approvals" ADD CONSTRAINT "agent_approvals_session_id_agent_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."agent_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_events" ADD CONSTRAINT "agent_events_session_id_agent_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."agent_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_messages" ADD CONSTRAINT "agent_messages_session_id_agent_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."agent_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhooks_attempts" ADD CONSTRAINT "webhooks_attempts_delivery_seq_webhooks_deliveries_seq_fk" FOREIGN KEY ("delivery_seq") REFERENCES "public"."webhooks_deliveries"("seq") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "catalog_assets" ADD CONSTRAINT "catalog_assets_edition_id_catalog_editions_id_fk" FOREIGN KEY ("edition_id") REFERENCES "public"."catalog_editions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "catalog_editions" ADD CONSTRAINT "catalog_editions_work_id_catalog_works_id_fk" FOREIGN KEY ("work_id") REFERENCES "public"."catalog_works"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "catalog_media_indexes" ADD CONSTRAINT "catalog_media_indexes_asset_id_catalog_assets_id_fk" FOREIGN KEY ("asset_id") REFERENCES "public"."catalog_assets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "catalog_relations" ADD CONSTRAINT "catalog_relations_parent_work_id_catalog_works_id_fk" FOREIGN KEY ("parent_work_id") REFERENCES "public"."catalog_works"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "catalog_relations" ADD CONSTRAINT "catalog_relations_child_work_id_catalog_works_id_fk" FOREIGN KEY ("child_work_id") REFERENCES "public"."catalog_works"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhooks_deliveries" ADD CONSTRAINT "webhooks_deliveries_registration_id_webhooks_registrations_id_fk" FOREIGN KEY ("registration_id") REFERENCES "public"."webhooks_registrations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "library_files" ADD CONSTRAINT "library_files_asset_id_catalog_assets_id_fk" FOREIGN KEY ("asset_id") REFERENCES "public"."catalog_assets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_refresh_tokens" ADD CONSTRAINT "identity_refresh_tokens_session_id_identity_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."identity_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_sessions" ADD CONSTRAINT "identity_sessions_actor_id_identity_actors_id_fk" FOREIGN KEY ("actor_id") REFERENCES "public"."identity_actors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_approvals_session_idx" ON "agent_approvals" USING btree ("session_id","status");--> statement-breakpoint
CREATE INDEX "agent_messages_session_idx" ON "agent_messages" USING btree ("session_id","ordinal");--> statement-breakpoint
CREATE INDEX "agent_sessions_owner_idx" ON "agent_sessions" USING btree ("owner","created_at");--> statement-breakpoint
CREATE INDEX "agent_usage_actor_at_idx" ON "agent_usage" USING btree ("actor","at");--> statement-breakpoint
CREATE INDEX "webhooks_attempts_delivery_idx" ON "webhooks_attempts" USING btree ("delivery_seq","attempt");--> statement-breakpoint
CREATE UNIQUE INDEX "catalog_assets_location" ON "catalog_assets" USING btree ("root","path");--> statement-breakpoint
CREATE INDEX "catalog_assets_edition" ON "catalog_assets" USING btree ("edition_id");--> statement-breakpoint
CREATE INDEX "catalog_editions_work" ON "catalog_editions" USING btree ("work_id","kind");--> statement-breakpoint
CREATE INDEX "catalog_event_outbox_unsent_idx" ON "catalog_event_outbox" USING btree ("sent_at","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "catalog_relations_pair" ON "catalog_relations" USING btree ("parent_work_id","child_work_id","rel");--> statement-breakpoint
CREATE INDEX "catalog_relations_child" ON "catalog_relations" USING btree ("child_work_id");--> statement-breakpoint
CREATE UNIQUE INDEX "catalog_works_match_key" ON "catalog_works" USING btree ("match_key");--> statement-breakpoint
CREATE INDEX "catalog_works_created" ON "catalog_works" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "webhooks_deliveries_due_idx" ON "webhooks_deliveries" USING btree ("next_attempt_at") WHERE status = 'pending' AND head;--> statement-breakpoint
CREATE INDEX "webhooks_deliveries_registration_due_idx" ON "webhooks_deliveries" USING btree ("registration_id","next_attempt_at") WHERE status = 'pending' AND head;--> statement-breakpoint
CREATE INDEX "webhooks_deliveries_order_idx" ON "webhooks_deliveries" USING btree ("registration_id","order_key","seq") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "webhooks_deliveries_log_idx" ON "webhooks_deliveries" USING btree ("registration_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "library_files_location" ON "library_files" USING btree ("root","path");--> statement-breakpoint
CREATE INDEX "library_files_asset" ON "library_files" USING btree ("asset_id");--> statement-breakpoint
CREATE INDEX "library_files_scan" ON "library_files" USING btree ("seen_scan","outcome");--> statement-breakpoint
CREATE INDEX "library_scans_job" ON "library_scans" USING btree ("job_id");--> statement-breakpoint
CREATE INDEX "identity_refresh_tokens_session_idx" ON "identity_refresh_tokens" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "webhooks_registrations_owner_idx" ON "webhooks_registrations" USING btree ("owner","created_at");--> statement-breakpoint
CREATE INDEX "identity_sessions_actor_idx" ON "identity_sessions" USING btree ("actor_id");--> statement-breakpoint
CREATE INDEX "identity_sessions_expires_idx" ON "identity_sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "workspaces_snapshots_owner_idx" ON "workspaces_snapshots" USING btree ("owner","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "sources_bindings_location" ON "sources_bindings" USING btree ("asset_id","kind","root","path");--> statement-breakpoint
CREATE INDEX "sources_bindings_asset" ON "sources_bindings" USING btree ("asset_id");--> statement-breakpoint
CREATE INDEX "usage_exec_actor_at_idx" ON "usage_exec" USING btree ("actor","at");--> statement-breakpoint
CREATE INDEX "usage_running_owner_idx" ON "usage_running" USING btree ("owner","started_at");--> statement-breakpoint
CREATE INDEX "usage_running_open_idx" ON "usage_running" USING btree ("workspace_id","ended_at");--> statement-breakpoint
CREATE UNIQUE INDEX "workers_jobs_pending_key" ON "workers_jobs" USING btree ("key") WHERE status = 'queued';--> statement-breakpoint
CREATE INDEX "workers_jobs_claim" ON "workers_jobs" USING btree ("status","run_at");--> statement-breakpoint
CREATE INDEX "workspaces_event_outbox_unsent_idx" ON "workspaces_event_outbox" USING btree ("sent_at","seq");--> statement-breakpoint
CREATE INDEX "workspaces_previews_workspace_idx" ON "workspaces_previews" USING btree ("workspace_id","created_at");--> statement-breakpoint
CREATE INDEX "workspaces_processes_workspace_idx" ON "workspaces_processes" USING btree ("workspace_id","started_at");--> statement-breakpoint
CREATE INDEX "workspaces_processes_status_idx" ON "workspaces_processes" USING btree ("status");--> statement-breakpoint
CREATE INDEX "workspaces_workspaces_owner_idx" ON "workspaces_workspaces" USING btree ("owner","created_at");