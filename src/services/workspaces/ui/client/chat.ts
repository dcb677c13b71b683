/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="dom.asynciterable" />
// The agent chat on a workspace's page, shown where the API has agent sessions: `Session` lists the
// workspace's sessions (the latest shown; `New session` starts another, its `Model` field used on
// the first message), a `Message` field with a
// `Send` button whose reply streams in, tool calls with their output, `Cancel` for a turn in
// flight, and, after a reload, the history plus the turn still running, followed to its end. A tool
// call that waits for approval shows with `Approve` and `Deny` buttons (and a `Reason` for a denial).
import type { AgentSession, AgentToolCall as ToolCall } from '../../../../../clients/typescript/src';
import { api, ApiError, messageOf, readStream, type StreamEvent } from './api';
import { announce, h, uid } from '../../../../platform/browser/dom';
import type { PanelContext } from './workspace';

type Session = AgentSession;

const DEFAULT_MODEL = 'openai/gpt-4o-mini';

export function chatPanel(ctx: PanelContext): HTMLElement {
  const log = h('div', { role: 'log', 'aria-label': 'Conversation', class: 'chat', tabindex: '0' });
  const error = h('p', { role: 'alert', class: 'error' });
  const model = h('input', { id: uid('model'), value: DEFAULT_MODEL, autocomplete: 'off', spellcheck: 'false' });
  const modelField = h('div', { class: 'field' }, h('label', { for: model.id }, 'Model'), model);
  const message = h('textarea', { id: uid('msg'), rows: '2', required: true });
  const send = h('button', { type: 'submit' }, 'Send');
  const cancel = h('button', { type: 'button', disabled: true }, 'Cancel');
  const picker = h('select', { id: uid('session') });
  const pickerField = h('div', { class: 'field' }, h('label', { for: picker.id }, 'Session'), picker);
  const section = h('section', { 'aria-labelledby': 'chat-h', hidden: true }, h('h2', { id: 'chat-h' }, 'Agent'), pickerField, log, error);
  let session: Session | undefined;
  let turn: AbortController | undefined;

  const scroll = () => (log.scrollTop = log.scrollHeight);
  const bubble = (role: 'user' | 'assistant', text: string) => {
    const el = h('div', { class: `msg ${role}` }, h('span', { class: 'who' }, role === 'user' ? 'You' : 'Agent'), h('p', { class: 'text' }, text));
    log.append(el);
    scroll();
    return el;
  };
  const tool = (into: HTMLElement, call: ToolCall) => {
    const input = call.input as { command?: string; path?: string } | undefined;
    into.insertBefore(
      h('details', { class: 'tool' }, h('summary', {}, `${call.name}${input?.command ? `: ${input.command}` : input?.path ? `: ${input.path}` : ''}`), h('pre', {}, JSON.stringify(call.output, null, 2))),
      into.querySelector('.text'),
    );
  };
  /** A call waiting for a decision: its buttons until decided; its `tool` event later closes it. */
  const approval = (into: HTMLElement, a: { id: string; toolCallId: string; name: string; input: unknown }) => {
    const input = a.input as { command?: string; path?: string } | undefined;
    const reason = h('input', { id: uid('reason'), autocomplete: 'off' });
    const status = h('p', { class: 'note' });
    const decide = async (decision: 'approve' | 'deny') => {
      if (!session) return;
      for (const b of card.querySelectorAll('button')) b.disabled = true;
      try {
        const r = reason.value.trim();
        await api('POST', `/api/agent/sessions/${session.id}/approvals/${encodeURIComponent(a.id)}`, { decision, ...(decision === 'deny' && r ? { reason: r } : {}) });
        decided(decision === 'approve' ? 'Approved' : 'Denied');
      } catch (e) {
        status.textContent = messageOf(e);
      }
    };
    const card = h(
      'div',
      { role: 'group', 'aria-label': `Approval of ${a.name}`, class: 'approval', 'data-call': a.toolCallId },
      h('p', {}, `Waiting for approval: ${a.name}${input?.command ? `: ${input.command}` : input?.path ? `: ${input.path}` : ''}`),
      h('div', { class: 'field' }, h('label', { for: reason.id }, 'Reason'), reason),
      h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => decide('approve') }, 'Approve'), h('button', { type: 'button', onclick: () => decide('deny') }, 'Deny')),
      status,
    );
    const decided = (text: string) => card.replaceChildren(h('p', { class: 'note' }, `${a.name}: ${text}`));
    into.insertBefore(card, into.querySelector('.text'));
    announce(`The agent asks to run ${a.name}`);
  };
  const ended = (into: HTMLElement, reason: string | null | undefined) => {
    if (reason && reason !== 'stop' && reason !== 'tool-calls') into.append(h('p', { class: 'note' }, `(${reason})`));
  };

  function render(s: Session) {
    log.replaceChildren();
    for (const m of s.messages) {
      if (m.role === 'assistant' && m.finishReason === null) continue; // the turn in flight: streamed below
      const el = bubble(m.role, m.content);
      for (const c of m.toolCalls ?? []) tool(el, c);
      if (m.role === 'assistant') ended(el, m.finishReason);
    }
    modelField.hidden = true;
  }

  /** Reads one turn's events into a new assistant bubble; `skipTurns` terminal events are history. */
  async function follow(path: string, body: unknown, skipTurns = 0) {
    turn = new AbortController();
    const signal = turn.signal;
    ctx.signal.addEventListener('abort', () => turn?.abort(), { once: true });
    send.disabled = true;
    cancel.disabled = false;
    let el: HTMLElement | undefined;
    let skip = skipTurns;
    const onEvent = (e: StreamEvent) => {
      if (skip > 0) {
        if (e.event === 'done' || e.event === 'error') skip--;
        return;
      }
      el ??= bubble('assistant', '');
      const text = el.querySelector('.text')!;
      if (e.event === 'delta') text.textContent += (e.data as { content: string }).content;
      else if (e.event === 'approval') approval(el, e.data as Parameters<typeof approval>[1]);
      else if (e.event === 'tool') {
        const call = e.data as ToolCall;
        // Decided (here or elsewhere): the card gives way to the call and its output.
        el.querySelector(`.approval[data-call="${CSS.escape(call.id)}"]`)?.remove();
        tool(el, call);
      }
      else if (e.event === 'done') {
        const d = e.data as { content: string; finishReason: string };
        text.textContent = d.content;
        ended(el, d.finishReason);
        announce('The agent answered');
      } else if (e.event === 'error') error.textContent = messageOf((e.data as { error?: { message?: string } }).error?.message ?? 'the turn failed');
      scroll();
    };
    try {
      await readStream(path, { signal, body, onEvent });
    } catch (e) {
      if (!signal.aborted) error.textContent = messageOf(e);
    } finally {
      send.disabled = false;
      cancel.disabled = true;
    }
  }

  /** Shows one session (its history, and its turn in flight followed), or none: a new one starts on Send. */
  async function open(id: string | undefined) {
    turn?.abort();
    log.replaceChildren();
    error.textContent = '';
    session = undefined;
    modelField.hidden = false;
    if (!id) return;
    session = await api<Session>('GET', `/api/agent/sessions/${id}`, undefined, ctx.signal);
    render(session);
    if (session.busy) {
      const done = session.messages.filter((m) => m.role === 'assistant' && m.finishReason !== null).length;
      void follow(`/api/agent/sessions/${session.id}/events`, undefined, done);
    }
  }

  function listSessions(sessions: { id: string; model: string; createdAt: string }[], selected?: string) {
    picker.replaceChildren(
      ...sessions.map((s, i) => h('option', { value: s.id, selected: s.id === selected }, `${i + 1}. ${s.model}, ${new Date(s.createdAt).toLocaleString()}`)),
      h('option', { value: '', selected: !selected }, 'New session'),
    );
  }

  async function load() {
    let list: { sessions: { id: string; model: string; createdAt: string }[] };
    try {
      list = await api('GET', `/api/agent/sessions?workspaceId=${encodeURIComponent(ctx.id)}`, undefined, ctx.signal);
    } catch (e) {
      // No agent sessions on this Keel (the route is absent): no panel.
      if (e instanceof ApiError && e.status === 404) return;
      section.hidden = false;
      error.textContent = messageOf(e);
      return;
    }
    section.hidden = false;
    const latest = list.sessions.at(-1);
    listSessions(list.sessions, latest?.id);
    await open(latest?.id);
  }
  picker.addEventListener('change', () => void open(picker.value || undefined).catch((e) => (error.textContent = messageOf(e))));

  const form = h(
    'form',
    {
      class: 'chat-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const text = message.value.trim();
        if (!text) return;
        error.textContent = '';
        try {
          if (!session) {
            session = await api<Session>('POST', '/api/agent/sessions', { workspaceId: ctx.id, model: model.value.trim() });
            const { sessions } = await api<{ sessions: { id: string; model: string; createdAt: string }[] }>('GET', `/api/agent/sessions?workspaceId=${encodeURIComponent(ctx.id)}`);
            listSessions(sessions, session.id);
          }
          modelField.hidden = true;
        } catch (err) {
          error.textContent = messageOf(err);
          return;
        }
        message.value = '';
        bubble('user', text);
        await follow(`/api/agent/sessions/${session.id}/messages`, { message: text, stream: true });
      },
    },
    modelField,
    h('div', { class: 'field' }, h('label', { for: message.id }, 'Message'), message),
    h('div', { class: 'actions' }, send, cancel),
  );
  // Enter sends, Shift+Enter is a new line.
  message.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  cancel.addEventListener('click', async () => {
    if (!session) return;
    try {
      await api('POST', `/api/agent/sessions/${session.id}/cancel`);
    } catch (err) {
      error.textContent = messageOf(err);
    }
  });
  section.append(form);
  void load();
  return section;
}
