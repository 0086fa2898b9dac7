// Drives chatd's frontend protocols with the stock client libraries, as a
// frontend would: the AI SDK's DefaultChatTransport, readUIMessageStream and
// Chat (AbstractChat, with the plain state a framework binding keeps), and
// AG-UI's HttpAgent. No adapters: only configuration.
//
// Run by the Go test TestFrontendProtocols, which starts chatd (the echo
// processor) and passes:
//   CHATD_URL            a chatd with the default elicitation TTL
//   CHATD_SHORT_TTL_URL  a chatd whose elicitations expire after a second
//   CHATD_PRINCIPAL_HEADER the header its gateway auth reads the principal from
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithToolCalls,
  readUIMessageStream,
} from 'ai';
import { HttpAgent } from '@ag-ui/client';

const base = process.env.CHATD_URL;
const shortTTLBase = process.env.CHATD_SHORT_TTL_URL;
const principalHeader = process.env.CHATD_PRINCIPAL_HEADER;
assert.ok(base && shortTTLBase && principalHeader, 'CHATD_URL, CHATD_SHORT_TTL_URL and CHATD_PRINCIPAL_HEADER are required');

const as = (principal) => ({ [principalHeader]: principal });
const alice = as('alice');
const bob = as('bob');

// --- chatd's native API, for set-up and for checking against history ---

async function api(baseURL, method, path, body, headers = alice) {
  const res = await fetch(baseURL + path, {
    method,
    headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function newThread(baseURL = base) {
  const res = await api(baseURL, 'POST', '/v1/threads', { processor: 'echo' });
  assert.equal(res.status, 201);
  return res.body.id;
}

async function history(threadId, baseURL = base) {
  const res = await api(baseURL, 'GET', `/v1/threads/${threadId}/messages`);
  assert.equal(res.status, 200);
  return res.body.messages;
}

async function waitUntil(what, cond) {
  for (let i = 0; i < 1000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const elicit = (params) => '/elicit ' + JSON.stringify(params);
const form = {
  message: 'Who are you?',
  requestedSchema: {
    type: 'object',
    properties: { name: { type: 'string', minLength: 1 }, age: { type: 'integer', minimum: 0 } },
    required: ['name'],
  },
};
const confirm = { message: 'Delete everything?', requestedSchema: { type: 'object', properties: {} } };
const sampleBlocks = [
  { type: 'text', text: 'See the card.' },
  { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png', annotations: { priority: 0, audience: ['user'] } },
  {
    type: 'resource_link', uri: 'entity:node/42', name: 'Article 42',
    _meta: { 'drupal.org/ai.entity': { entity_type: 'node', id: '42', uuid: '0f8fad5b-d9cb-469f-a165-70867728950e', view_mode: 'teaser' } },
  },
  { type: 'resource', resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'notes' } },
];

// --- Vercel AI SDK ---

function transport(baseURL = base, headers = alice, fetchFn, body) {
  return new DefaultChatTransport({ api: baseURL + '/v1/ai-sdk/chat', headers, fetch: fetchFn, body });
}

// userMessage is the UI message useChat's sendMessage({text}) builds.
const userMessage = (text, files = []) => ({
  id: crypto.randomUUID(), role: 'user', parts: [...files, { type: 'text', text }],
});

// reply sends one message through the stock transport and reads the stock
// stream reader to its end.
async function reply(threadId, message, { baseURL = base, headers = alice } = {}) {
  const stream = await transport(baseURL, headers).sendMessages({
    chatId: threadId, messages: [message], trigger: 'submit-message', messageId: undefined,
    abortSignal: undefined,
  });
  // The parts as the transport parsed them, and the message the stock reader
  // builds from them.
  const [forParts, forReader] = stream.tee();
  const parts = [];
  const collecting = (async () => { for await (const p of forParts) parts.push(p); })();
  let last;
  for await (const m of readUIMessageStream({ stream: forReader, terminateOnError: true })) last = m;
  await collecting;
  return { message: last, parts };
}

// TestChat is AbstractChat with the plain state object every framework
// binding (React, Vue, Svelte) keeps; it adds nothing to the protocol.
class TestChat extends AbstractChat {
  constructor(options) {
    const state = {
      status: 'ready', error: undefined, messages: [],
      pushMessage(m) { this.messages = this.messages.concat(m); },
      popMessage() { this.messages = this.messages.slice(0, -1); },
      replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; },
      snapshot: (v) => structuredClone(v),
    };
    super({ ...options, state });
  }
}

// countingFetch counts the POSTs a chat makes.
function countingFetch() {
  const f = async (url, init) => {
    if (init?.method === 'POST') f.posts++;
    return fetch(url, init);
  };
  f.posts = 0;
  return f;
}

function newChat(threadId, { baseURL = base, fetchFn, body } = {}) {
  return new TestChat({
    id: threadId,
    transport: transport(baseURL, alice, fetchFn, body),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
  });
}

const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const elicitationPart = (m) => m.parts.find((p) => p.type === 'tool-elicitation');

test('ai-sdk: a streamed reply, its IDs those of history', async () => {
  const thread = await newThread();
  const { message, parts } = await reply(thread, userMessage('/slow 1 one two three'));
  assert.equal(textOf(message), 'one two three');
  assert.deepEqual(parts.map((p) => p.type), ['start', 'start-step', 'text-start', 'text-delta', 'text-delta', 'text-delta', 'text-end', 'message-metadata', 'finish-step', 'finish']);
  assert.deepEqual(parts.filter((p) => p.type === 'text-delta').map((p) => p.delta), ['one ', 'two ', 'three']);
  const [user, assistant] = await history(thread);
  assert.equal(user.message, '/slow 1 one two three');
  assert.equal(message.id, assistant.id);
  assert.deepEqual(message.metadata.chatd, {
    thread_id: thread, turn_id: message.metadata.chatd.turn_id, message_id: assistant.id, user_message_id: user.id, _meta: {},
  });
});

test('ai-sdk: content blocks equal history\'s, attachments become blocks', async () => {
  const thread = await newThread();
  const { message } = await reply(thread, userMessage('/blocks ' + JSON.stringify(sampleBlocks)));
  const blocks = message.parts.filter((p) => p.type === 'data-content-block').map((p) => p.data);
  const [, assistant] = await history(thread);
  assert.deepEqual(blocks, assistant.content_blocks);
  assert.deepEqual(blocks, sampleBlocks);

  const file = { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: 'data:image/png;base64,iVBORw0KGgo=' };
  const echoed = await reply(thread, userMessage('look', [file]));
  assert.equal(textOf(echoed.message), 'look');
  const sent = (await history(thread)).at(-2);
  assert.deepEqual(sent.content_blocks, [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }]);
  assert.deepEqual(echoed.message.parts.filter((p) => p.type === 'data-content-block').map((p) => p.data), sent.content_blocks);
});

test('ai-sdk: a form answered with addToolOutput, sent once, ends ready', async () => {
  const thread = await newThread();
  const fetchFn = countingFetch();
  const chat = newChat(thread, { fetchFn });
  await chat.sendMessage({ text: elicit(form) });
  assert.equal(chat.status, 'ready');
  const paused = chat.lastMessage;
  const call = elicitationPart(paused);
  assert.equal(call.state, 'input-available');
  const [, question] = await history(thread);
  assert.equal(paused.id, question.id);
  assert.equal(call.toolCallId, question._meta['drupal.org/ai.elicitation_id']);
  assert.deepEqual(call.input, { ...form, _meta: { 'drupal.org/ai.elicitation_id': call.toolCallId } });

  await chat.addToolOutput({ tool: 'elicitation', toolCallId: call.toolCallId, output: { action: 'accept', content: { name: 'Ada', age: 36 } } });
  await waitUntil('the answer\'s reply', () => chat.status === 'ready' && elicitationPart(chat.lastMessage).state === 'output-available' && textOf(chat.lastMessage).endsWith('}'));
  assert.equal(chat.messages.length, 2, 'the reply continues the paused message');
  const answered = chat.lastMessage;
  assert.equal(answered.id, paused.id);
  assert.ok(textOf(answered).endsWith('{"action":"accept","content":{"age":36,"name":"Ada"}}'));
  const msgs = await history(thread);
  assert.equal(msgs.length, 4);
  assert.equal(answered.metadata.chatd.message_id, msgs[3].id);
  assert.equal(msgs[2]._meta['drupal.org/ai.elicitation_result'].action, 'accept');
  // The exchange is over: nothing left to send automatically.
  assert.equal(await lastAssistantMessageIsCompleteWithToolCalls({ messages: chat.messages }), false);
  assert.equal(fetchFn.posts, 2);
  assert.equal(chat.status, 'ready');
});

test('ai-sdk: a confirm declined', async () => {
  const thread = await newThread();
  const chat = newChat(thread);
  await chat.sendMessage({ text: elicit(confirm) });
  const call = elicitationPart(chat.lastMessage);
  assert.deepEqual(call.input.requestedSchema, { type: 'object', properties: {} });
  await chat.addToolOutput({ tool: 'elicitation', toolCallId: call.toolCallId, output: { action: 'decline' } });
  await waitUntil('the decline\'s reply', () => chat.status === 'ready' && textOf(chat.lastMessage).endsWith('{"action":"decline"}'));
  assert.equal((await history(thread)).at(-2)._meta['drupal.org/ai.elicitation_result'].action, 'decline');
});

test('ai-sdk: an expired answer is the chat\'s error', async () => {
  const thread = await newThread(shortTTLBase);
  const chat = newChat(thread, { baseURL: shortTTLBase });
  await chat.sendMessage({ text: elicit(form) });
  const call = elicitationPart(chat.lastMessage);
  await waitUntil('the elicitation to expire', async () => (await api(shortTTLBase, 'GET', `/v1/threads/${thread}`)).body.pending_elicitation === null);
  await chat.addToolOutput({ tool: 'elicitation', toolCallId: call.toolCallId, output: { action: 'accept', content: { name: 'Ada' } } });
  await waitUntil('the chat\'s error', () => chat.status === 'error');
  assert.match(chat.error.message, /elicitation_expired/);
});

test('ai-sdk: an unknown thread, and another principal\'s, are not found', async () => {
  await assert.rejects(reply(crypto.randomUUID(), userMessage('hi')), /not_found/);
  const thread = await newThread();
  await assert.rejects(reply(thread, userMessage('hi'), { headers: bob }), /not_found/);
  await assert.rejects(reply(thread, userMessage('hi'), { headers: {} }), /unauthorized/);
});

test('ai-sdk: a failing processor is an error part', async () => {
  const thread = await newThread();
  await assert.rejects(reply(thread, userMessage('/fail')), /processor_failed/);
});

test('ai-sdk: reattach to a running turn with resumeStream', async () => {
  const thread = await newThread();
  const first = newChat(thread);
  const sending = first.sendMessage({ text: '/slow 100 alpha beta gamma delta epsilon' });
  await waitUntil('the turn to run', async () => (await api(base, 'GET', `/v1/threads/${thread}`)).body.running_turn !== null);

  // A second tab (or a reload) with useChat({resume: true}).
  const second = newChat(thread);
  await second.resumeStream();
  await sending;
  assert.equal(second.status, 'ready');
  assert.equal(second.messages.length, 1);
  assert.equal(textOf(second.lastMessage), 'alpha beta gamma delta epsilon');
  assert.equal(second.lastMessage.id, first.lastMessage.id);

  // Nothing runs any more: 204, and the chat stays as it was.
  const third = newChat(thread);
  await third.resumeStream();
  assert.equal(third.status, 'ready');
  assert.equal(third.messages.length, 0);
  assert.equal(await transport().reconnectToStream({ chatId: thread }), null);
});

// A turn that streams a word every 50 ms for a minute unless it is stopped.
const longTurn = '/slow 50 ' + 'w '.repeat(1200);

// stopRunning stops the thread's running turn through the native API.
async function stopRunning(threadId) {
  await waitUntil('the turn to run', async () => (await api(base, 'GET', `/v1/threads/${threadId}`)).body.running_turn !== null);
  const res = await api(base, 'POST', `/v1/threads/${threadId}/cancel`);
  assert.equal(res.status, 202);
  assert.equal(res.body.status, 'stopping');
}

async function waitStopped(threadId) {
  await waitUntil('the stopped reply', async () => (await history(threadId)).length === 2);
  const [, assistant] = await history(threadId);
  assert.equal(assistant._meta['drupal.org/ai.stopped'], true);
  assert.ok(assistant.message.length < longTurn.length);
  return assistant;
}

test('ai-sdk: useChat\'s stop with stopOnDisconnect stops the turn', async () => {
  const thread = await newThread();
  const chat = newChat(thread, { body: { stopOnDisconnect: true } });
  const sending = chat.sendMessage({ text: longTurn });
  await waitUntil('the reply to stream', () => chat.lastMessage?.role === 'assistant' && textOf(chat.lastMessage).length > 0);
  await chat.stop();
  await sending;
  assert.equal(chat.status, 'ready');
  const assistant = await waitStopped(thread);
  assert.ok(assistant.message.startsWith(textOf(chat.lastMessage)), 'what the chat showed is what was kept, or its beginning');
});

test('ai-sdk: a stopped turn ends with an abort chunk before [DONE]', async () => {
  const thread = await newThread();
  const [{ message, parts }] = await Promise.all([reply(thread, userMessage(longTurn)), stopRunning(thread)]);
  assert.deepEqual(parts.slice(-3).map((p) => p.type), ['message-metadata', 'finish-step', 'abort']);
  assert.ok(!parts.some((p) => p.type === 'finish'));
  const assistant = await waitStopped(thread);
  assert.equal(textOf(message), assistant.message);
  assert.equal(message.metadata.chatd._meta['drupal.org/ai.stopped'], true);
});

test('ai-sdk: a new message while a question is pending cancels the question', async () => {
  const thread = await newThread();
  const chat = newChat(thread);
  await chat.sendMessage({ text: elicit(form) });
  const call = elicitationPart(chat.lastMessage);
  assert.equal(call.state, 'input-available');
  await chat.sendMessage({ text: 'never mind' });
  assert.equal(chat.status, 'ready');
  assert.equal(textOf(chat.lastMessage), 'never mind');
  const msgs = await history(thread);
  assert.deepEqual(msgs.map((m) => m.message), [elicit(form), form.message, 'Cancelled.', 'never mind', 'never mind']);
  assert.deepEqual(msgs[2]._meta['drupal.org/ai.elicitation_result'], { elicitation_id: call.toolCallId, action: 'cancel' });
  assert.equal((await api(base, 'GET', `/v1/threads/${thread}`)).body.pending_elicitation, null);
});

// --- AG-UI ---

// run runs one HttpAgent run and collects its events.
async function run(agent, params) {
  const events = [];
  let failure;
  try {
    await agent.runAgent(params, { onEvent: ({ event }) => { events.push(event); } });
  } catch (err) {
    failure = err;
  }
  return { events, failure, types: events.map((e) => e.type) };
}

function newAgent(threadId, { baseURL = base, headers = alice } = {}) {
  return new HttpAgent({ url: baseURL + '/v1/ag-ui', headers, threadId });
}

function say(agent, content) {
  agent.addMessage({ id: crypto.randomUUID(), role: 'user', content });
}

test('ag-ui: a streamed reply', async () => {
  const thread = await newThread();
  const agent = newAgent(thread);
  say(agent, '/slow 1 one two three');
  const { events, types, failure } = await run(agent);
  assert.equal(failure, undefined);
  assert.deepEqual(types, ['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
  const [, assistant] = await history(thread);
  assert.equal(events[1].messageId, assistant.id);
  assert.equal(agent.messages.at(-1).content, 'one two three');
  assert.equal(agent.messages.at(-1).id, assistant.id);
  assert.equal(events.at(-1).outcome.type, 'success');
});

test('ag-ui: content blocks equal history\'s', async () => {
  const thread = await newThread();
  const agent = newAgent(thread);
  say(agent, '/blocks ' + JSON.stringify(sampleBlocks));
  const { events } = await run(agent);
  const custom = events.find((e) => e.type === 'CUSTOM' && e.name === 'chatd.content_blocks');
  const [, assistant] = await history(thread);
  assert.deepEqual(custom.value, { message_id: assistant.id, content_blocks: assistant.content_blocks, _meta: {} });
  assert.deepEqual(custom.value.content_blocks, sampleBlocks);

  say(agent, [{ type: 'text', text: 'look' }, { type: 'image', source: { type: 'data', value: 'iVBORw0KGgo=', mimeType: 'image/png' } }]);
  await run(agent);
  assert.deepEqual((await history(thread)).at(-2).content_blocks, [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }]);
});

test('ag-ui: a form is an interrupt, answered with resume', async () => {
  const thread = await newThread();
  const agent = newAgent(thread);
  say(agent, elicit(form));
  const paused = await run(agent);
  const finished = paused.events.at(-1);
  assert.equal(finished.outcome.type, 'interrupt');
  const [interrupt] = finished.outcome.interrupts;
  const [, question] = await history(thread);
  assert.equal(interrupt.id, question._meta['drupal.org/ai.elicitation_id']);
  assert.equal(interrupt.reason, 'input_required');
  assert.equal(interrupt.message, form.message);
  assert.deepEqual(interrupt.responseSchema, form.requestedSchema);
  assert.deepEqual(interrupt.metadata, { _meta: { 'drupal.org/ai.elicitation_id': interrupt.id } });
  assert.ok(Date.parse(interrupt.expiresAt) > Date.now());
  assert.deepEqual(agent.pendingInterrupts.map((i) => i.id), [interrupt.id]);

  const resumed = await run(agent, { resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { action: 'accept', content: { name: 'Ada', age: 36 } } }] });
  assert.equal(resumed.failure, undefined);
  assert.equal(resumed.events.at(-1).outcome.type, 'success');
  assert.equal(agent.messages.at(-1).content, '{"action":"accept","content":{"age":36,"name":"Ada"}}');
  assert.deepEqual(agent.pendingInterrupts, []);
  const msgs = await history(thread);
  assert.equal(msgs.length, 4);
  assert.equal(msgs[3].id, agent.messages.at(-1).id);
});

test('ag-ui: a confirm declined, and one cancelled', async () => {
  const thread = await newThread();
  const agent = newAgent(thread);
  say(agent, elicit(confirm));
  const [interrupt] = (await run(agent)).events.at(-1).outcome.interrupts;
  assert.equal(interrupt.reason, 'confirmation');
  await run(agent, { resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { action: 'decline' } }] });
  assert.equal(agent.messages.at(-1).content, '{"action":"decline"}');

  say(agent, elicit(confirm));
  const [again] = (await run(agent)).events.at(-1).outcome.interrupts;
  await run(agent, { resume: [{ interruptId: again.id, status: 'cancelled' }] });
  assert.equal(agent.messages.at(-1).content, '{"action":"cancel"}');
});

test('ag-ui: an answer that breaks the form, then one too late', async () => {
  const thread = await newThread(shortTTLBase);
  const agent = newAgent(thread, { baseURL: shortTTLBase });
  say(agent, elicit(form));
  const [interrupt] = (await run(agent)).events.at(-1).outcome.interrupts;

  // A fresh agent (a reloaded page) that knows only the interrupt's ID.
  const invalid = await run(newAgent(thread, { baseURL: shortTTLBase }), { resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { action: 'accept', content: { age: -1 } } }] });
  const invalidError = invalid.events.find((e) => e.type === 'RUN_ERROR');
  assert.equal(invalidError.code, 'validation_failed');
  assert.deepEqual(invalidError.metadata.errors.map((e) => e.field).sort(), ['age', 'name']);

  await waitUntil('the elicitation to expire', async () => (await api(shortTTLBase, 'GET', `/v1/threads/${thread}`)).body.pending_elicitation === null);
  // The stock agent itself refuses to answer an interrupt past expiresAt…
  const refused = await run(agent, { resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { action: 'accept', content: { name: 'Ada' } } }] });
  assert.match(String(refused.failure), /expired/);
  // …and chatd does too, whoever asks.
  const late = await run(newAgent(thread, { baseURL: shortTTLBase }), { resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { action: 'accept', content: { name: 'Ada' } } }] });
  assert.deepEqual(late.types, ['RUN_ERROR']);
  assert.equal(late.events[0].code, 'elicitation_expired');
});

test('ag-ui: an unknown thread, another principal\'s, and a failing processor are RUN_ERRORs', async () => {
  const unknown = newAgent(crypto.randomUUID());
  say(unknown, 'hi');
  const missing = await run(unknown);
  assert.deepEqual(missing.types, ['RUN_ERROR']);
  assert.equal(missing.events[0].code, 'not_found');

  const thread = await newThread();
  const intruder = newAgent(thread, { headers: bob });
  say(intruder, 'hi');
  assert.equal((await run(intruder)).events[0].code, 'not_found');

  const agent = newAgent(thread);
  say(agent, '/fail');
  const failed = await run(agent);
  assert.deepEqual(failed.types, ['RUN_STARTED', 'RUN_ERROR']);
  assert.equal(failed.events[1].code, 'processor_failed');
});

test('ag-ui: abortRun with forwardedProps.stopOnDisconnect stops the turn', async () => {
  const thread = await newThread();
  const agent = newAgent(thread);
  say(agent, longTurn);
  let content = 0;
  const running = agent.runAgent({ forwardedProps: { stopOnDisconnect: true } }, {
    onEvent: ({ event }) => { if (event.type === 'TEXT_MESSAGE_CONTENT' && ++content === 2) agent.abortRun(); },
  }).catch(() => {});
  await running;
  await waitStopped(thread);
});

test('ag-ui: a stopped run finishes with success after the partial text', async () => {
  const thread = await newThread();
  const agent = newAgent(thread);
  say(agent, longTurn);
  const [{ events, types, failure }] = await Promise.all([run(agent), stopRunning(thread)]);
  assert.equal(failure, undefined);
  assert.deepEqual(types.slice(-3), ['TEXT_MESSAGE_END', 'CUSTOM', 'RUN_FINISHED']);
  assert.equal(events.at(-1).outcome.type, 'success');
  const assistant = await waitStopped(thread);
  assert.equal(agent.messages.at(-1).content, assistant.message);
  const custom = events.find((e) => e.type === 'CUSTOM' && e.name === 'chatd.content_blocks');
  assert.equal(custom.value._meta['drupal.org/ai.stopped'], true);
});

// --- Attachments that are files ---

const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const bigPDF = '%PDF-1.7\n' + '0'.repeat(20 * 1024);

// download reads a stored file as its owner.
async function download(threadId, uri, headers = alice) {
  const res = await fetch(`${base}/v1/threads/${threadId}/files/${uri.slice('chatd:file/'.length)}`, { headers });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

test('ai-sdk: file parts become embedded resources, stored files and links', async () => {
  const thread = await newThread();
  // A file uploaded first, then named by its chatd:file URL.
  const upload = await fetch(`${base}/v1/threads/${thread}/files?name=notes.txt`, {
    method: 'POST', headers: { ...alice, 'content-type': 'text/plain' }, body: 'my notes',
  });
  assert.equal(upload.status, 201);
  const uploaded = await upload.json();
  const files = [
    { type: 'file', mediaType: 'text/plain', filename: 'small.txt', url: 'data:text/plain;base64,' + b64('hi there') },
    { type: 'file', mediaType: 'application/pdf', filename: 'big.pdf', url: 'data:application/pdf;base64,' + b64(bigPDF) },
    { type: 'file', mediaType: 'text/plain', filename: 'notes.txt', url: uploaded.uri },
  ];
  const { message } = await reply(thread, userMessage('read these', files));
  assert.equal(textOf(message), 'read these');
  const [sent] = await history(thread);
  assert.equal(sent.content_blocks.length, 3);
  assert.deepEqual(sent.content_blocks[0], { type: 'resource', resource: { uri: 'attachment:small.txt', mimeType: 'text/plain', text: 'hi there' } });
  const stored = sent.content_blocks[1];
  assert.equal(stored.type, 'resource_link');
  assert.equal(stored.name, 'big.pdf');
  assert.equal(stored.mimeType, 'application/pdf');
  assert.equal(stored.size, bigPDF.length);
  const got = await download(thread, stored.uri);
  assert.equal(got.status, 200);
  assert.equal(got.text, bigPDF);
  assert.equal((await download(thread, stored.uri, bob)).status, 404);
  assert.equal(sent.content_blocks[2].uri, uploaded.uri);

  // A file of another thread cannot be linked.
  const other = await newThread();
  const refused = await transport().sendMessages({
    chatId: other, messages: [userMessage('steal', [files[2]])], trigger: 'submit-message', messageId: undefined, abortSignal: undefined,
  }).then(async (stream) => { const parts = []; for await (const p of stream) parts.push(p); return parts; }, (err) => err);
  const errorPart = Array.isArray(refused) ? refused.find((p) => p.type === 'error') : undefined;
  assert.ok(errorPart || refused instanceof Error, 'linking another thread\'s file fails');
  assert.deepEqual(await history(other), []);
});

test('ag-ui: document and binary parts become blocks and stored files', async () => {
  const thread = await newThread();
  const agent = newAgent(thread);
  say(agent, [
    { type: 'text', text: 'look' },
    { type: 'document', source: { type: 'data', value: b64(bigPDF), mimeType: 'application/pdf' } },
    { type: 'document', source: { type: 'data', value: b64('# small'), mimeType: 'text/markdown' } },
    { type: 'binary', mimeType: 'image/png', data: 'iVBORw0KGgo=', filename: 'dot.png' },
  ]);
  const { failure } = await run(agent);
  assert.equal(failure, undefined);
  const [sent] = await history(thread);
  assert.equal(sent.content_blocks.length, 3);
  assert.equal(sent.content_blocks[0].type, 'resource_link');
  assert.equal((await download(thread, sent.content_blocks[0].uri)).text, bigPDF);
  assert.deepEqual(sent.content_blocks[1], { type: 'resource', resource: { uri: 'attachment:attachment', mimeType: 'text/markdown', text: '# small' } });
  assert.deepEqual(sent.content_blocks[2], { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' });
});

// --- branches: regenerate and edit through useChat ---

async function page(threadId, query = '') {
  const res = await api(base, 'GET', `/v1/threads/${threadId}/messages?limit=200${query}`);
  assert.equal(res.status, 200);
  return res.body.messages;
}

test('ai-sdk: useChat\'s regenerate() makes sibling replies, start naming each', async () => {
  const thread = await newThread();
  const chat = newChat(thread);
  await chat.sendMessage({ text: 'hello' });
  const first = chat.lastMessage.id;
  await chat.regenerate();
  assert.equal(chat.status, 'ready');
  const second = chat.lastMessage.id;
  assert.notEqual(second, first);
  assert.equal(chat.messages.length, 2);
  await chat.regenerate({ messageId: second });
  const third = chat.lastMessage.id;
  assert.equal(textOf(chat.lastMessage), 'hello');
  const messages = await page(thread);
  assert.deepEqual(messages.map((m) => m.id).slice(1), [third], 'the head is the newest reply');
  assert.deepEqual(messages[1].siblings, { index: 2, ids: [first, second, third] });
  const thr = await api(base, 'GET', `/v1/threads/${thread}`);
  assert.equal(thr.body.head_id, third);
});

test('ai-sdk: sendMessage({text, messageId}) edits a user message of history', async () => {
  const thread = await newThread();
  for (const text of ['one', 'two']) {
    assert.equal((await api(base, 'POST', `/v1/threads/${thread}/turns`, { message: text })).status, 200);
  }
  const before = await history(thread);
  // The chat shows the thread's history with chatd's IDs, as a page that
  // loads it does.
  const chat = newChat(thread);
  chat.messages = before.map((m) => ({ id: m.id, role: m.role, parts: [{ type: 'text', text: m.message }] }));
  await chat.sendMessage({ text: 'two, edited', messageId: before[2].id });
  assert.equal(chat.status, 'ready');
  assert.equal(chat.messages.length, 4);
  assert.equal(textOf(chat.lastMessage), 'two, edited');
  const after = await page(thread);
  assert.deepEqual(after.map((m) => m.message), ['one', 'one', 'two, edited', 'two, edited']);
  assert.equal(after[2].parent_id, before[1].id, 'the edit follows what the edited message followed');
  assert.deepEqual(after[2].siblings, { index: 1, ids: [before[2].id, after[2].id] });
  assert.equal(chat.lastMessage.id, after[3].id, 'start names the reply');
  const old = await page(thread, `&leaf=${before[3].id}`);
  assert.deepEqual(old.map((m) => m.id), before.map((m) => m.id), 'the edited branch is kept');
});
