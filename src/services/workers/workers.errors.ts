// The codes the workers service answers with (over HTTP, on the bus, and as a job's failure) beyond
// the platform's; the problem+json renderer and the OpenAPI description both read this table.
import { defineErrors, errorFactories, joinErrors } from '../../platform/errors';
import { busErrorTable, problemErrorTable } from '../../platform/platform.errors';

const own = defineErrors({
  WORKERS_JOB_NOT_FOUND: { status: 404, description: 'no such job' },
  WORKERS_JOB_INVALID: { status: 422, description: 'the job is refused' },
  // A job's failure: not retried, the operator must make the root readable.
  LIBRARY_ROOT_UNAVAILABLE: { status: 422, retryable: false, category: 'recoverable', description: 'the library root cannot be read' },
  // Playback jobs' failures (the playback service turns them into its own PLAYBACK_SEGMENT_FAILED).
  PLAYBACK_FFMPEG_FAILED: { status: 502, retryable: true, category: 'transient', description: 'ffmpeg could not make the segment or sprite, or was stopped' },
  PLAYBACK_SOURCE_UNREADABLE: { status: 422, retryable: false, category: 'recoverable', description: 'the source file of a playback job cannot be read on the worker' },
});

export const workersErrorTable = joinErrors(problemErrorTable, busErrorTable, own);

/** What the service throws: one factory per code (`WorkersErrors.X(message, details)`), no HTTP in them. */
export const WorkersErrors = errorFactories(workersErrorTable);
