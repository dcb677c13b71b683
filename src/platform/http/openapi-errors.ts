// The error responses of each operation, from the service's error table: every code an operation can
// answer is listed, grouped by the status the table gives it, as an enum on the error schema of that
// status (the 404 of getWorkspace has `code: enum ["WORKSPACE_NOT_FOUND"]`). Routes name their codes
// with `operation(id, codes)`; the codes every route of a kind shares (validation, authentication,
// body limits) are added here.
import type { DocumentDecoration } from 'elysia';
import type { ErrorTable } from '../errors';
import type { ErrorStyle } from './errors';
import { operationsOf, type Document, type Operation, type Schema } from './openapi-schemas';

/** Where a route's detail keeps the codes it declares, until the document turns them into enums. */
const CODES = 'x-keel-errors';

/**
 * A route's identity in the document: its stable operationId (what SDK generators name the method)
 * and the codes it answers beyond those the platform adds. Spread it into the route's `detail`.
 */
export function operation<Code extends string>(operationId: string, codes: readonly Code[] = []): DocumentDecoration {
  return { operationId, [CODES]: [...codes] } as DocumentDecoration;
}

/** `operation` typed by a service's table, so a misspelt code does not compile. */
export const operationsFor =
  <T extends ErrorTable>(_table: T) =>
  (operationId: string, codes: readonly (keyof T & string)[] = []) =>
    operation(operationId, codes);

/** The codes the platform answers on an operation, read from what it takes and whether it needs a token. */
function implicitCodes(style: ErrorStyle, op: Operation, authenticated: boolean): string[] {
  const takesInput = (op.parameters?.length ?? 0) > 0 || op.requestBody !== undefined;
  const codes: string[] = [];
  if (style === 'envelope') {
    if (takesInput) codes.push('INVALID_REQUEST');
    if (op.requestBody) codes.push('PAYLOAD_TOO_LARGE');
    if (authenticated) codes.push('UNAUTHORIZED', 'RATE_LIMITED');
  } else {
    if (takesInput) codes.push('validation');
    if (op.requestBody) codes.push('parse', 'payload-too-large');
  }
  return codes;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The envelope or problem schema of one status, its `code` an enum of the codes given. */
function errorSchema(style: ErrorStyle, codes: string[], table: ErrorTable): Schema {
  const code = { type: 'string', enum: codes, description: codes.map((c) => `${c}: ${table[c]?.description ?? ''}`).join('; ') };
  // The named component, narrowed: a generator gives one error type per service (ErrorEnvelope,
  // Problem) whose code is, on each response, exactly the codes that operation answers there.
  if (style === 'envelope') {
    return { allOf: [ref('ErrorEnvelope'), { type: 'object', required: ['error'], properties: { error: { type: 'object', required: ['code'], properties: { code } } } }] };
  }
  return { allOf: [ref('Problem'), { type: 'object', required: ['code'], properties: { code } }] };
}

function example(style: ErrorStyle, code: string, table: ErrorTable) {
  const spec = table[code]!;
  const message = spec.description;
  if (style === 'envelope') return { error: { code, message, details: {} } };
  return {
    type: `https://keel.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`,
    title: message[0]!.toUpperCase() + message.slice(1),
    status: spec.status,
    code,
    retryable: spec.retryable ?? spec.status >= 500,
    category: spec.category ?? (spec.status >= 500 ? 'transient' : 'permanent'),
  };
}

/**
 * Writes each operation's error responses from its codes and the table; a declared code the table
 * does not know is a programming error. A status the route declares for which no code is listed
 * keeps the generic schema (the document test refuses that).
 */
export function addErrorResponses(doc: Document, style: ErrorStyle, table: ErrorTable) {
  const media = style === 'envelope' ? 'application/json' : 'application/problem+json';
  const globalSecurity = Array.isArray(doc.security) && doc.security.length > 0;
  for (const { path, method, op } of operationsOf(doc)) {
    const declared = Array.isArray(op[CODES]) ? (op[CODES] as string[]) : [];
    delete op[CODES];
    const authenticated = op.security ? op.security.length > 0 : globalSecurity;
    const codes = [...new Set([...implicitCodes(style, op, authenticated), ...declared])];
    const byStatus = new Map<number, string[]>();
    for (const code of codes) {
      const spec = table[code];
      if (!spec) throw new Error(`${method.toUpperCase()} ${path} declares ${code}, which the service's error table does not`);
      byStatus.set(spec.status, [...(byStatus.get(spec.status) ?? []), code]);
    }
    op.responses ??= {};
    // A status no code answers is not documented (a route's `response` may list more than it answers).
    for (const status of Object.keys(op.responses)) if (Number(status) >= 400 && !byStatus.has(Number(status))) delete op.responses[status];
    for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
      op.responses[String(status)] = {
        description: list.map((c) => `\`${c}\`: ${table[c]!.description}`).join('; '),
        content: { [media]: { schema: errorSchema(style, list, table), example: example(style, list[0]!, table) } },
      };
    }
  }
}

/** The service's error shape as a named component: the envelope (ErrorEnvelope) or Problem Details (Problem). */
export function errorComponent(doc: Document, style: ErrorStyle, schema: Schema) {
  const schemas = ((doc.components ??= {}).schemas ??= {});
  const name = style === 'envelope' ? 'ErrorEnvelope' : 'Problem';
  if (schemas[name]) return;
  // No route names it in a `response` (a route's error responses come from its codes): the copy
  // drops the naming mark that extractComponents would have removed.
  const copy = JSON.parse(JSON.stringify(schema)) as Schema;
  delete copy['x-keel-component'];
  schemas[name] = copy;
}
