// The codes the sources service answers with (over HTTP and on the bus) beyond the platform's; the
// problem+json renderer and the OpenAPI description both read this table.
import { defineErrors, errorFactories, joinErrors } from '../../platform/errors';
import { problemErrorTable } from '../../platform/platform.errors';

const own = defineErrors({
  SOURCES_REQUEST_INVALID: { status: 422, description: 'qry.sources.resolve needs an assetId of 1 to 128 characters' },
});

export const sourcesErrorTable = joinErrors(problemErrorTable, own);

/** What the service throws: one factory per code (`SourcesErrors.X(message, details)`), no HTTP in them. */
export const SourcesErrors = errorFactories(sourcesErrorTable);
