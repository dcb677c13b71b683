// @keel/sdk: Keel's workspaces, commands, files, processes, previews, terminals and agent sessions
// from Node.js (>= 20), Bun or a browser. `new Keel({url, token})`; see README.md.
export { Keel, Workspaces, Snapshots, Workspace, Commands, Files, Processes, Process, Previews, Terminals, AgentSessions, AgentSession, Http } from './keel.js';
export type {
  KeelOptions,
  CommandOptions,
  CommandResult,
  FileEntry,
  ProcessOptions,
  Preview,
  Terminal,
  TerminalOptions,
  AgentEvent,
  AgentEventType,
  CreateSessionBody,

} from './keel.js';
export { KeelError } from './errors.js';
export { Media, Catalog, Library, Playback } from './media.js';
export type { MediaOptions, ScanBody, ScanResult, LibraryScan, LibraryScanView, PlaybackSession as MediaPlaybackSession } from './media.js';
export { readEvents, type SseEvent } from './sse.js';
// The low-level typed client (openapi-fetch, one per service) and the generated schema types.
export * from './openapi.js';
