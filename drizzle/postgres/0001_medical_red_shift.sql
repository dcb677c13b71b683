CREATE TABLE "playback_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"actor_id" text NOT NULL,
	"identity_session_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"mode" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"ended_at" bigint
);
--> statement-breakpoint
CREATE INDEX "playback_sessions_expires_idx" ON "playback_sessions" USING btree ("expires_at");