// Schemas of the terminals API: open a terminal, a ticket to attach to it, the WebSocket's query.
import { t } from 'elysia';

export const TerminalBody = t.Object(
  {
    cols: t.Optional(t.Integer({ minimum: 1, maximum: 1000, default: 80, description: 'columns of the TTY (default 80)' })),
    rows: t.Optional(t.Integer({ minimum: 1, maximum: 1000, default: 24, description: 'rows of the TTY (default 24)' })),
    command: t.Optional(t.String({ minLength: 1, maxLength: 65536, pattern: '^[^\\u0000]*$', description: "run by `sh -c` on the TTY; default: the template user's login shell (`sh -l`)" })),
  },
  { additionalProperties: false },
);

export const TerminalTicket = t.Object({
  id: t.String({ description: 'the terminal' }),
  ticket: t.String({ description: 'single-use: authorises one WebSocket upgrade of GET .../terminals/{tid}?ticket=' }),
  expiresAt: t.String({ format: 'date-time', description: 'the ticket is refused after this (60 s)' }),
});

export const TerminalParams = t.Object({ id: t.String({ maxLength: 64 }), tid: t.String({ maxLength: 64 }) });
export const TerminalAttachQuery = t.Object({ ticket: t.String({ maxLength: 128 }) });
