// A chatd remote processor in plain Node (20 or later, no packages): it
// greets, shows an entity card, and asks a form that pauses the turn and
// resumes it when the user answers. Replies stream as NDJSON: text.delta
// lines as the text is written, then the result.
//
//   PROCESSOR_SECRET=change-me node server.js      (listens on 127.0.0.1:8002)
//
// docs/remote-processors.md in the chatd repository is the protocol.
'use strict';

const crypto = require('node:crypto');
const http = require('node:http');

const HOST = process.env.HOST || '127.0.0.1';
const PORT = Number(process.env.PORT || 8002);
const SECRET = process.env.PROCESSOR_SECRET || '';
// Requests signed longer ago than this are refused as replays.
const MAX_AGE_SECONDS = 300;
const MAX_BODY_BYTES = 4 << 20;

// verifySignature checks Chatd-Signature: t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<t>.<raw body>">. The body must be the bytes as
// received: parsing and re-encoding it would change them.
function verifySignature(header, body) {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header || '');
  if (!match) return false;
  const age = Math.abs(Date.now() / 1000 - Number(match[1]));
  if (age > MAX_AGE_SECONDS) return false;
  const want = crypto.createHmac('sha256', SECRET).update(match[1] + '.').update(body).digest();
  return crypto.timingSafeEqual(want, Buffer.from(match[2], 'hex'));
}

// A card for a Drupal node: a resource_link any client can follow, which an
// entity-aware frontend renders as the node's teaser.
function entityCard(id) {
  const hex = crypto.createHash('md5').update('node/' + id).digest('hex');
  const uuid = [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20, 32)].join('-');
  return {
    type: 'resource_link',
    uri: 'entity:node/' + id,
    name: 'node/' + id,
    title: 'Article ' + id,
    _meta: { 'drupal.org/ai.entity': { entity_type: 'node', id: String(id), uuid, view_mode: 'teaser' } },
  };
}

const contactForm = {
  message: 'Who should we reply to?',
  requestedSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', title: 'Name', minLength: 1, maxLength: 100 },
      email: { type: 'string', title: 'Email', format: 'email' },
      topic: {
        type: 'string', title: 'Topic',
        oneOf: [{ const: 'billing', title: 'Billing' }, { const: 'technical', title: 'Technical' }],
      },
    },
    required: ['name', 'email'],
  },
};

// answer returns the reply to one turn: {text, content_blocks?, _meta?, pause?}.
function answer(req) {
  if (req.resume) return resumed(req.resume);
  const text = (req.message.message || '').trim();
  const card = /^card\s+(\d+)$/i.exec(text);
  if (card) {
    return { text: `Here is article ${card[1]}.`, content_blocks: [entityCard(card[1])] };
  }
  if (/^form$/i.test(text)) {
    return { text: 'I need a few details first.', pause: { elicitation: contactForm, state: { step: 'contact', turn: req.turn_id } } };
  }
  return {
    text: `Hello, ${req.principal}! You said: ${text}`,
    _meta: { 'drupal.org/ai.suggested_replies': ['card 42', 'form'] },
  };
}

function resumed(resume) {
  if (!resume.state || resume.state.step !== 'contact') {
    return { text: 'I lost track of that question; please ask again.' };
  }
  const { action, content } = resume.result;
  if (action !== 'accept') {
    return { text: action === 'decline' ? 'No problem: nothing was sent.' : 'Cancelled.' };
  }
  const topic = content.topic ? ` about ${content.topic}` : '';
  return { text: `Thanks, ${content.name}! We will write to ${content.email}${topic}.` };
}

// stream writes the reply's text word by word as text.delta lines, then the
// whole reply as the result line.
// This reply is known whole at once, so its lines go out in one write; a
// processor that waits on a model between deltas writes each line as it
// comes (res.write), and chatd passes each on as it arrives.
function stream(res, reply) {
  const lines = [];
  for (const word of reply.text.split(/(?<= )/)) {
    if (word) lines.push(JSON.stringify({ type: 'text.delta', delta: word }));
  }
  lines.push(JSON.stringify({ type: 'result', ...reply }));
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
  res.end(lines.join('\n') + '\n');
}

function problem(res, status, title) {
  res.writeHead(status, { 'Content-Type': 'application/problem+json' });
  res.end(JSON.stringify({ type: 'about:blank', title, status }));
}

function handle(req, res, body) {
  if (req.method !== 'POST') return problem(res, 405, 'POST a turn');
  if (SECRET && !verifySignature(req.headers['chatd-signature'], body)) {
    return problem(res, 401, 'The request signature is not valid');
  }
  let turn;
  try {
    turn = JSON.parse(body.toString('utf8'));
  } catch {
    return problem(res, 400, 'The request is not JSON');
  }
  stream(res, answer(turn));
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      problem(res, 413, 'The request is too large');
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (res.writableEnded) return;
    try {
      handle(req, res, Buffer.concat(chunks));
    } catch (err) {
      console.error(err);
      if (!res.headersSent) problem(res, 500, 'The processor failed');
      else res.destroy();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(PORT, HOST, () => {
  console.log(`listening on http://${HOST}:${server.address().port}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
