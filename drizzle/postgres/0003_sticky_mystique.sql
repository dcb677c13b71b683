CREATE TABLE "playback_progress" (
	"actor_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"position_ms" bigint NOT NULL,
	"duration_ms" bigint NOT NULL,
	"played" boolean NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "playback_progress_actor_id_asset_id_pk" PRIMARY KEY("actor_id","asset_id")
);
--> statement-breakpoint
CREATE INDEX "playback_progress_recent" ON "playback_progress" USING btree ("actor_id","updated_at");