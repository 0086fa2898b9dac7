// chatd's chat page. Plain JavaScript, no build step. It talks to the /v1
// API like any other frontend. One rule keeps it safe: message content only
// ever reaches the page as text (textContent) or as attribute values checked
// against the allow-lists below; nothing a message carries becomes markup.
'use strict';

(() => {
  const META = {
    citations: 'drupal.org/ai.citations',
    suggested: 'drupal.org/ai.suggested_replies',
    entity: 'drupal.org/ai.entity',
    status: 'drupal.org/ai.status_item',
    elicitationID: 'drupal.org/ai.elicitation_id',
    widgets: 'drupal.org/ai.widgets',
    result: 'drupal.org/ai.elicitation_result',
    toolCall: 'drupal.org/ai.tool_call',
    stopped: 'drupal.org/ai.stopped',
  };
  // The same allow-lists as internal/render: raster images and common audio
  // only (never SVG), as data: URLs built from checked parts.
  const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif'];
  const AUDIO_TYPES = ['audio/mpeg', 'audio/ogg', 'audio/wav', 'audio/x-wav', 'audio/webm', 'audio/mp4', 'audio/aac', 'audio/flac'];
  const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
  const STORE_KEY = 'chatd.key';
  const STORE_THREAD = 'chatd.thread';

  const $ = (id) => document.getElementById(id);
  const entityTemplate = document.querySelector('meta[name="chatd-entity-url-template"]').content;

  const state = {
    key: sessionStorage.getItem(STORE_KEY) || '',
    processors: [],
    defaultProcessor: '',
    thread: null, // the Thread shown
    olderCursor: null,
    threadsCursor: null,
    busy: false,
    streaming: null, // the turn being written, while its Stop button shows
    pending: null, // {request, expiresAt, form}
    expiryTimer: null,
    threadsSupported: true,
    attachments: [], // Files chosen, dropped or pasted, uploaded when the message is sent
    fileURLs: new Map(), // chatd:file URI → blob: URL of a file fetched for display
  };

  // ---- elements ------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      node.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return node;
  }

  function setStatus(text, kind) {
    const s = $('status');
    s.textContent = text || '';
    s.dataset.kind = kind || '';
  }

  // ---- URLs ----------------------------------------------------------

  // linkURL returns where a link to uri may point, or null to show it as
  // text: http(s) and mailto as they are, entity:<type>/<id> through the
  // configured template.
  function linkURL(uri) {
    if (typeof uri !== 'string' || /[\u0000-\u0020\u007f]/.test(uri)) return null;
    if (uri.startsWith('entity:')) return entityURL(uri);
    let u;
    try { u = new URL(uri); } catch { return null; }
    switch (u.protocol) {
      case 'http:': case 'https:': return u.host ? u.href : null;
      case 'mailto:': return u.href;
    }
    return null;
  }

  // parseEntityURI splits entity:<type>/<id> at the first "/".
  function parseEntityURI(uri) {
    const m = /^entity:([^/]+)\/([\s\S]+)$/.exec(uri || '');
    return m ? { type: m[1], id: m[2] } : null;
  }

  // entityURL links an entity by the server renderer's rules
  // (internal/render's EntityURL), so the page and ?render=html agree: a
  // type or id of "." or "..", or holding "/", "?", "#", "&", a space or a
  // control character, is not linked; values are taken as written (never
  // percent-decoded) and escaped for where they land, the query or
  // fragment (after the template's first "?" or "#") or the path.
  function entityURL(uri) {
    const e = parseEntityURI(uri);
    if (!e || !entityTemplate || !linkableEntityPart(e.type) || !linkableEntityPart(e.id)) return null;
    const q = entityTemplate.search(/[?#]/);
    const query = q < 0 ? entityTemplate.length : q;
    const url = entityTemplate.replace(/\{(type|id)\}/g, (_, name, at) => (at >= query ? queryEscape : pathEscape)(e[name]));
    try {
      const u = new URL(url);
      return u.protocol === 'http:' || u.protocol === 'https:' ? url : null;
    } catch { return null; }
  }

  function linkableEntityPart(s) {
    return s !== '.' && s !== '..' && !/[\u0000-\u0020\u007f/?#&]/.test(s);
  }

  // queryEscape and pathEscape are Go's url.QueryEscape and url.PathEscape,
  // which the server renderer uses: every UTF-8 byte but those kept is
  // %XX. (encodeURIComponent keeps !'()* and so differs.)
  const queryEscape = (s) => escapeBytes(s, /[A-Za-z0-9\-_.~]/, '+');
  const pathEscape = (s) => escapeBytes(s, /[A-Za-z0-9\-_.~$&+:=@]/, null);

  function escapeBytes(s, keep, space) {
    let out = '';
    for (const byte of new TextEncoder().encode(s)) {
      const c = String.fromCharCode(byte);
      if (byte < 0x80 && keep.test(c)) out += c;
      else if (byte === 0x20 && space) out += space;
      else out += '%' + byte.toString(16).toUpperCase().padStart(2, '0');
    }
    return out;
  }

  function mediaSrc(mimeType, data, allowed) {
    const mt = String(mimeType || '').toLowerCase();
    if (!allowed.includes(mt) || typeof data !== 'string' || !BASE64.test(data)) return null;
    return `data:${mt};base64,${data}`;
  }

  // ---- API -----------------------------------------------------------

  class Problem extends Error {
    constructor(status, body) {
      super((body && (body.detail || body.title)) || `HTTP ${status}`);
      this.status = status;
      this.body = body || {};
      this.code = this.body.code || '';
    }
  }

  function headers(extra) {
    const h = new Headers(extra || {});
    if (state.key) h.set('Authorization', `Bearer ${state.key}`);
    return h;
  }

  // request sends one API request. A 401 with a Bearer challenge asks for
  // the key and tries again.
  async function request(method, path, { body, raw, accept, extraHeaders, signal } = {}) {
    for (;;) {
      const h = headers(extraHeaders);
      h.set('Accept', accept || 'application/json');
      if (body !== undefined) h.set('Content-Type', 'application/json');
      const payload = raw !== undefined ? raw : (body === undefined ? undefined : JSON.stringify(body));
      const resp = await fetch(path, { method, headers: h, body: payload, signal });
      if (resp.status === 401 && /bearer/i.test(resp.headers.get('WWW-Authenticate') || '')) {
        await askForKey(state.key ? 'That key was not accepted. Try another.' : '');
        continue;
      }
      return resp;
    }
  }

  async function api(method, path, body) {
    const resp = await request(method, path, { body });
    if (resp.status === 204) return null;
    const data = await resp.json().catch(() => null);
    if (!resp.ok) throw new Problem(resp.status, data);
    return data;
  }

  function askForKey(note) {
    const dialog = $('key-dialog');
    if (note) $('key-note').textContent = note;
    return new Promise((resolve) => {
      dialog.addEventListener('close', function onClose() {
        dialog.removeEventListener('close', onClose);
        const key = $('api-key').value.trim();
        $('api-key').value = '';
        state.key = key;
        if (key) sessionStorage.setItem(STORE_KEY, key);
        resolve();
      });
      if (!dialog.open) dialog.showModal();
    });
  }

  // ---- Server-Sent Events over fetch -----------------------------------

  // readEvents calls onEvent({id, event, data}) for each event of an SSE
  // response body and returns the last event id seen.
  async function readEvents(resp, onEvent) {
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let lastID = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const raw = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const ev = { id: null, event: 'message', data: '' };
        const data = [];
        for (const line of raw.split('\n')) {
          if (line === '' || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? '' : line.slice(colon + 1);
          if (val.startsWith(' ')) val = val.slice(1);
          if (field === 'id') ev.id = val;
          else if (field === 'event') ev.event = val;
          else if (field === 'data') data.push(val);
        }
        if (data.length === 0) continue;
        ev.data = data.join('\n');
        if (ev.id !== null) lastID = ev.id;
        const stop = onEvent(ev);
        if (stop) { reader.cancel().catch(() => {}); return lastID; }
      }
    }
    return lastID;
  }

  // ---- rendering messages ---------------------------------------------

  function roleLabel(role) { return role === 'user' ? 'You' : 'Assistant'; }

  function formatTime(ts) {
    const d = new Date(ts);
    return isNaN(d) ? '' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  }

  // renderMessage builds one message of history or of a turn.
  function renderMessage(m) {
    const meta = m._meta || {};
    const item = el('li', { class: `msg msg-${m.role === 'user' ? 'user' : 'assistant'}`, 'data-id': m.id });
    const head = el('div', { class: 'msg-head' },
      el('span', { class: 'msg-role', text: roleLabel(m.role) }),
      el('time', { datetime: m.timestamp, text: formatTime(m.timestamp) }));
    item.append(head);
    if (meta[META.result]) item.classList.add('msg-answer');
    if (meta[META.elicitationID]) item.classList.add('msg-question');
    if (meta[META.stopped] === true) {
      item.classList.add('msg-stopped');
      head.append(el('span', { class: 'badge stopped-badge', text: 'Stopped' }));
    }
    fillMessage(item, m);
    const controls = branchControls(m);
    if (controls) item.append(controls);
    return item;
  }

  // ---- branches ----------------------------------------------------------
  // History is a tree: Regenerate asks for another reply, Edit sends a
  // message beside the one edited, and ‹ 2/3 › pickers switch between the
  // alternatives. The server keeps the current branch (the thread's head),
  // so a reload shows the branch the user was on.

  // branchControls are a message's Regenerate or Edit button and its
  // sibling picker, or null when it has none (a question, an answer, a
  // message still being sent).
  function branchControls(m) {
    if (!m.id) return null;
    const meta = m._meta || {};
    const bar = el('div', { class: 'msg-actions' });
    const sib = m.siblings;
    if (sib && Array.isArray(sib.ids) && sib.ids.length > 1 && Number.isInteger(sib.index)) {
      const at = sib.index;
      bar.append(el('span', { class: 'picker', role: 'group', 'aria-label': 'Alternatives' },
        el('button', { type: 'button', class: 'picker-prev', 'aria-label': 'Previous alternative', text: '‹', disabled: at === 0,
          onclick: () => switchBranch(sib.ids[at - 1]) }),
        el('span', { class: 'picker-pos', text: `${at + 1}/${sib.ids.length}` }),
        el('button', { type: 'button', class: 'picker-next', 'aria-label': 'Next alternative', text: '›', disabled: at === sib.ids.length - 1,
          onclick: () => switchBranch(sib.ids[at + 1]) })));
    }
    if (m.role === 'assistant' && !meta[META.elicitationID]) {
      bar.append(el('button', { type: 'button', class: 'regenerate', text: 'Regenerate', onclick: () => regenerate(m) }));
    }
    if (m.role === 'user' && !meta[META.result]) {
      bar.append(el('button', { type: 'button', class: 'edit', text: 'Edit', onclick: (ev) => startEdit(ev.target.closest('li'), m) }));
    }
    return bar.childNodes.length ? bar : null;
  }

  // branchAction runs a change of branch, then shows the thread's head
  // branch as the server now has it.
  async function branchAction(fn) {
    if (state.busy || !state.thread) return;
    if (state.pending && pendingExpired()) clearPending();
    setBusy(true);
    const threadID = state.thread.id;
    try {
      await fn(threadID);
    } catch (err) {
      showError(err);
    } finally {
      setBusy(false);
    }
    await openThread(threadID).catch(showError);
  }

  // dropFrom removes item and every message after it: they are not on the
  // branch about to be shown.
  function dropFrom(item) {
    while (item && item.nextSibling) item.nextSibling.remove();
    if (item) item.remove();
  }

  function switchBranch(id) {
    return branchAction((threadID) => api('PATCH', `/v1/threads/${encodeURIComponent(threadID)}`, { head_id: id }));
  }

  function regenerate(m) {
    return branchAction(async (threadID) => {
      dropFrom($('messages').querySelector(`li[data-id="${CSS.escape(m.id)}"]`));
      await runTurn(`/v1/threads/${encodeURIComponent(threadID)}/messages/${encodeURIComponent(m.id)}/regenerate`, {}, null, true);
    });
  }

  // startEdit turns a user message into a small editor; saving sends the
  // new text as a turn after what the message followed.
  function startEdit(item, m) {
    if (!item || state.busy || item.querySelector('.edit-box')) return;
    const box = el('textarea', { class: 'edit-box', 'aria-label': 'Edit message', rows: '3' });
    box.value = m.message || '';
    const save = el('button', { type: 'button', class: 'edit-save', text: 'Send' });
    const cancel = el('button', { type: 'button', class: 'edit-cancel', text: 'Cancel' });
    const form = el('div', { class: 'edit-form' }, box, el('div', { class: 'edit-buttons' }, cancel, save));
    item.append(form);
    box.focus();
    cancel.addEventListener('click', () => form.remove());
    save.addEventListener('click', () => {
      const text = box.value.trim();
      if (!text) return;
      branchAction(async (threadID) => {
        dropFrom(item);
        const optimistic = appendMessage({ id: '', role: 'user', message: text, timestamp: new Date().toISOString() });
        optimistic.classList.add('sending');
        await runTurn(`/v1/threads/${encodeURIComponent(threadID)}/turns`, { message: text, parent_id: m.parent_id ?? null }, optimistic, true);
      });
    });
  }

  // fillMessage (re)fills a message item's body: text, status, blocks,
  // sources, suggested replies.
  function fillMessage(item, m) {
    for (const n of item.querySelectorAll(':scope > :not(.msg-head)')) n.remove();
    const meta = m._meta || {};
    const status = statusItem(meta[META.status]);
    if (status) item.append(status);
    if (m.message) item.append(el('div', { class: 'msg-text', text: m.message }));
    const cited = citations(meta[META.citations]);
    const citedBlocks = new Set(cited.map((c) => c.block_index).filter((i) => Number.isInteger(i)));
    const blocks = (m.content_blocks || []).filter((_, i) => !citedBlocks.has(i));
    if (blocks.length) item.append(el('div', { class: 'blocks' }, ...blocks.map(renderBlock)));
    if (cited.length) item.append(renderSources(cited, m.content_blocks || []));
    const suggested = suggestions(meta[META.suggested]);
    if (suggested.length && m.role === 'assistant') {
      item.append(el('div', { class: 'suggestions', role: 'group', 'aria-label': 'Suggested replies' },
        ...suggested.map((s) => el('button', { type: 'button', class: 'suggestion', text: s.label, onclick: () => send(s.message) }))));
    }
  }

  function statusItem(s) {
    if (!s || typeof s !== 'object' || typeof s.label !== 'string') return null;
    const st = ['running', 'done', 'failed'].includes(s.state) ? s.state : 'running';
    const item = el('div', { class: `status-item status-${st}` }, el('span', { class: 'dot', 'aria-hidden': 'true' }), s.label);
    // A running MCP tool's progress: a bar when its total is known, the
    // count otherwise, and what the tool says it is doing.
    if (st === 'running' && typeof s.progress === 'number' && isFinite(s.progress)) {
      const total = typeof s.total === 'number' && isFinite(s.total) && s.total > 0 ? s.total : null;
      if (total !== null) {
        item.append(el('progress', { class: 'status-progress', max: String(total), value: String(Math.min(Math.max(s.progress, 0), total)),
          'aria-label': `${s.label}: ${s.progress} of ${total}` }));
      } else {
        item.append(el('span', { class: 'status-count', text: String(s.progress) }));
      }
    }
    // What the tool says it is doing: its progress message, or its task's
    // status message.
    const said = [s.message, s.statusMessage].find((m) => typeof m === 'string' && m);
    if (st === 'running' && said) item.append(el('span', { class: 'status-message', text: said }));
    return item;
  }

  function citations(v) {
    if (!Array.isArray(v)) return [];
    return v.filter((c) => c && typeof c === 'object').map((c) => ({
      uri: typeof c.uri === 'string' ? c.uri : '',
      title: typeof c.title === 'string' && c.title ? c.title : (typeof c.uri === 'string' ? c.uri : 'source'),
      snippet: typeof c.snippet === 'string' ? c.snippet : '',
      block_index: c.block_index,
    }));
  }

  function renderSources(cited, blocks) {
    const list = el('ol', { class: 'sources' });
    cited.forEach((c) => {
      const href = linkURL(c.uri);
      const block = Number.isInteger(c.block_index) ? blocks[c.block_index] : null;
      const li = el('li', {},
        href ? el('a', { href, rel: 'noopener noreferrer nofollow', target: '_blank', text: c.title }) : el('span', { text: c.title }));
      if (block && typeof block.description === 'string' && block.description) li.append(el('span', { class: 'source-desc', text: block.description }));
      if (c.snippet) li.append(el('q', { text: c.snippet }));
      if (!href && c.uri) li.append(el('code', { text: c.uri }));
      list.append(li);
    });
    return el('section', { class: 'sources-box', 'aria-label': 'Sources' }, el('h3', { text: 'Sources' }), list);
  }

  function suggestions(v) {
    if (!Array.isArray(v)) return [];
    const out = [];
    for (const s of v) {
      if (typeof s === 'string' && s) out.push({ label: s, message: s });
      else if (s && typeof s === 'object') {
        const label = typeof s.label === 'string' && s.label ? s.label : s.message;
        const message = typeof s.message === 'string' && s.message ? s.message : s.label;
        if (typeof label === 'string' && typeof message === 'string' && label) out.push({ label, message });
      }
    }
    return out;
  }

  function renderBlock(b) {
    switch (b && b.type) {
      case 'text':
        return el('div', { class: 'block block-text', text: String(b.text) });
      case 'image': {
        const src = mediaSrc(b.mimeType, b.data, IMAGE_TYPES);
        if (!src) return refused('image', b.mimeType);
        return el('figure', { class: 'block block-image' }, el('img', { src, alt: altOf(b, 'Image') }));
      }
      case 'audio': {
        const src = mediaSrc(b.mimeType, b.data, AUDIO_TYPES);
        if (!src) return refused('audio', b.mimeType);
        return el('figure', { class: 'block block-audio' }, el('audio', { controls: true, src, 'aria-label': altOf(b, 'Audio') }));
      }
      case 'resource_link':
        if (isFileURI(b.uri)) return renderFile(b);
        return isEntity(b) ? renderEntityCard(b) : renderLink(b);
      case 'resource':
        return renderResource(b);
    }
    return el('p', { class: 'block block-unknown', text: `[${String(b && b.type)} block]` });
  }

  function altOf(b, kind) {
    const name = b._meta && typeof b._meta.alt === 'string' ? b._meta.alt : '';
    return name || `${kind} (${b.mimeType})`;
  }

  function refused(kind, mimeType) {
    return el('p', { class: 'block block-refused', text: `[${kind} of type ${String(mimeType)} not shown]` });
  }

  function isEntity(b) {
    const e = b._meta && b._meta[META.entity];
    return (e && typeof e === 'object') || parseEntityURI(b.uri) !== null;
  }

  function renderLink(b) {
    const href = linkURL(b.uri);
    const label = b.title || b.name || b.uri;
    const box = el('div', { class: 'block block-link' });
    box.append(href
      ? el('a', { href, rel: 'noopener noreferrer nofollow', target: '_blank', text: String(label) })
      : el('span', { class: 'link-text', text: String(label) }));
    const details = [];
    if (b.mimeType) details.push(String(b.mimeType));
    if (typeof b.size === 'number') details.push(formatSize(b.size));
    if (details.length) box.append(el('span', { class: 'hint', text: ` ${details.join(', ')}` }));
    if (!href) box.append(el('code', { class: 'uri', text: String(b.uri) }));
    if (b.description) box.append(el('p', { class: 'hint', text: String(b.description) }));
    return box;
  }

  // ---- files ---------------------------------------------------------

  const FILE_PREFIX = 'chatd:file/';

  function isFileURI(uri) { return typeof uri === 'string' && uri.startsWith(FILE_PREFIX); }

  function fileURL(uri) {
    return `/v1/threads/${encodeURIComponent(state.thread.id)}/files/${encodeURIComponent(uri.slice(FILE_PREFIX.length))}`;
  }

  // fileBlob fetches a stored file with the API key (an <img src> could not
  // send it) and returns a blob: URL of it, fetched once per page.
  async function fileBlob(uri) {
    if (state.fileURLs.has(uri)) return state.fileURLs.get(uri);
    const resp = await request('GET', fileURL(uri), { accept: '*/*' });
    if (!resp.ok) throw new Problem(resp.status, await resp.json().catch(() => null));
    const url = URL.createObjectURL(await resp.blob());
    state.fileURLs.set(uri, url);
    return url;
  }

  // renderFile shows a stored file: an image inline, anything else as a
  // download, both fetched with the key.
  function renderFile(b) {
    const name = String(b.title || b.name || 'file');
    const details = [b.mimeType ? String(b.mimeType) : '', typeof b.size === 'number' ? formatSize(b.size) : ''].filter(Boolean).join(', ');
    if (state.thread && IMAGE_TYPES.includes(b.mimeType)) {
      const img = el('img', { alt: name, class: 'file-image' });
      fileBlob(b.uri).then((url) => { img.src = url; }, () => { img.replaceWith(el('span', { class: 'hint', text: `[${name}: not available]` })); });
      return el('figure', { class: 'block block-image block-file' }, img, el('figcaption', { class: 'hint', text: name }));
    }
    const link = el('a', { href: '#', class: 'file-download', download: name, text: name });
    link.addEventListener('click', async (e) => {
      if (link.dataset.ready) return; // the blob: URL is set: the browser downloads it
      e.preventDefault();
      try {
        link.href = await fileBlob(b.uri);
        link.dataset.ready = 'true';
        link.click();
      } catch (err) {
        showError(err);
      }
    });
    const box = el('div', { class: 'block block-link block-file' }, link);
    if (details) box.append(el('span', { class: 'hint', text: ` ${details}` }));
    return box;
  }

  function addFiles(files) {
    for (const f of files) state.attachments.push(f);
    renderAttachments();
  }

  function renderAttachments() {
    const list = $('attachments');
    list.replaceChildren(...state.attachments.map((f, i) => el('li', { class: 'attachment' },
      el('span', { text: `${f.name || 'pasted file'} (${formatSize(f.size)})` }),
      el('button', { type: 'button', class: 'link-button', 'aria-label': `Remove ${f.name}`, text: '×',
        onclick: () => { state.attachments.splice(i, 1); renderAttachments(); } }))));
  }

  // uploadAttachments uploads the files to the thread and returns their
  // resource_link blocks.
  async function uploadAttachments(threadID) {
    const links = [];
    for (const f of state.attachments) {
      const name = f.name || `pasted.${(f.type.split('/')[1] || 'bin').replace(/[^a-z0-9]/gi, '')}`;
      const extraHeaders = f.type ? { 'Content-Type': f.type } : {};
      const resp = await request('POST', `/v1/threads/${encodeURIComponent(threadID)}/files?name=${encodeURIComponent(name)}`, { raw: f, extraHeaders });
      const data = await resp.json().catch(() => null);
      if (!resp.ok) throw new Problem(resp.status, data);
      links.push({ type: 'resource_link', uri: data.uri, name: data.name, mimeType: data.mime_type, size: data.size });
    }
    return links;
  }

  function renderEntityCard(b) {
    const meta = (b._meta && b._meta[META.entity]) || {};
    const parsed = parseEntityURI(b.uri) || {};
    const type = String(meta.entity_type || parsed.type || 'entity');
    const id = String(meta.id || parsed.id || '');
    const title = String(b.title || b.name || `${type} ${id}`);
    const href = linkURL(b.uri);
    const card = el('article', { class: 'block entity-card', 'aria-label': `${type} ${id}` });
    card.append(el('div', { class: 'entity-type', text: type.replaceAll('_', ' ') }));
    card.append(el('h3', {}, href ? el('a', { href, rel: 'noopener noreferrer nofollow', target: '_blank', text: title }) : title));
    if (b.description) card.append(el('p', { text: String(b.description) }));
    const facts = [`${type}/${id}`];
    if (meta.view_mode) facts.push(`view mode: ${meta.view_mode}`);
    card.append(el('p', { class: 'entity-facts', text: facts.join(' · ') }));
    if (meta.uuid) card.append(el('p', { class: 'entity-uuid', text: String(meta.uuid) }));
    return card;
  }

  function renderResource(b) {
    const r = b.resource || {};
    const href = linkURL(r.uri);
    const caption = el('figcaption', {},
      href ? el('a', { href, rel: 'noopener noreferrer nofollow', target: '_blank', text: String(r.uri) }) : el('code', { text: String(r.uri) }));
    if (r.mimeType) caption.append(el('span', { class: 'hint', text: ` ${r.mimeType}` }));
    const fig = el('figure', { class: 'block block-resource' }, caption);
    if (typeof r.text === 'string') fig.append(el('pre', { text: r.text }));
    else if (typeof r.blob === 'string') fig.append(el('p', { class: 'hint', text: `binary, ${formatSize(Math.floor(r.blob.length * 3 / 4) - (r.blob.match(/=/g) || []).length)}` }));
    return fig;
  }

  function formatSize(n) {
    if (n < 1024) return `${n} bytes`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
    return `${(n / 1024 / 1024).toFixed(1)} MB`;
  }

  // Only the newest assistant message offers its suggested replies.
  function refreshSuggestions() {
    const all = $('messages').querySelectorAll('.suggestions');
    all.forEach((s, i) => { s.hidden = i !== all.length - 1 || state.pending !== null; });
  }

  function appendMessage(m) {
    const existing = m.id && $('messages').querySelector(`li[data-id="${CSS.escape(m.id)}"]`);
    const node = renderMessage(m);
    if (existing) existing.replaceWith(node);
    else $('messages').append(node);
    refreshSuggestions();
    scrollDown();
    return node;
  }

  function scrollDown() {
    const log = $('log');
    log.scrollTop = log.scrollHeight;
  }

  // ---- threads ---------------------------------------------------------

  async function loadProcessors() {
    const data = await api('GET', '/v1/processors');
    state.processors = data.processors || [];
    state.defaultProcessor = data.default || '';
    const select = $('processor');
    select.replaceChildren(...state.processors.map((p) => el('option', { value: p.name, selected: p.name === state.defaultProcessor, text: p.name })));
    describeProcessor();
  }

  function describeProcessor() {
    const p = state.processors.find((x) => x.name === $('processor').value);
    $('processor-description').textContent = p ? p.description : '';
  }

  async function loadThreads(more) {
    let path = '/v1/threads?limit=30';
    if (more && state.threadsCursor) path += `&before=${encodeURIComponent(state.threadsCursor)}`;
    const resp = await request('GET', path);
    if (resp.status === 404 || resp.status === 405) {
      // A chatd without the thread list: show the open thread only.
      state.threadsSupported = false;
      $('threads-note').hidden = false;
      $('threads-note').textContent = 'This chatd does not list threads; the open one is shown.';
      renderThreadList(state.thread ? [state.thread] : [], false);
      return [];
    }
    const data = await resp.json().catch(() => null);
    if (!resp.ok) throw new Problem(resp.status, data);
    state.threadsCursor = data.next_before || null;
    $('more-threads').hidden = !state.threadsCursor;
    renderThreadList(data.threads || [], more);
    return data.threads || [];
  }

  function threadLabel(t) {
    if (typeof t.title === 'string' && t.title) return t.title.length > 80 ? `${t.title.slice(0, 80)}…` : t.title;
    return 'New thread';
  }

  function renderThreadList(threads, append) {
    const list = $('threads');
    if (!append) list.replaceChildren();
    for (const t of threads) {
      if (state.thread && state.thread.id === t.id && threadLabel(t) !== 'New thread') $('thread-title').textContent = threadLabel(t);
      const current = state.thread && state.thread.id === t.id;
      const when = new Date(t.updated_at || t.created_at);
      const button = el('button', { type: 'button', class: 'thread', 'aria-current': current ? 'true' : null, onclick: () => openThread(t.id) },
        el('span', { class: 'thread-title', text: threadLabel(t) }),
        el('span', { class: 'thread-meta', text: `${t.processor} · ${isNaN(when) ? '' : when.toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })}` }));
      if (t.running_turn) button.append(el('span', { class: 'badge live', text: 'running' }));
      else if (t.pending_elicitation) button.append(el('span', { class: 'badge ask', text: 'question' }));
      list.append(el('li', { 'data-id': t.id }, button));
    }
  }

  function markCurrentThread() {
    for (const li of $('threads').children) {
      const b = li.querySelector('button');
      if (li.dataset.id === (state.thread && state.thread.id)) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
  }

  async function newThread(processor) {
    const t = await api('POST', '/v1/threads', processor ? { processor } : undefined);
    await showThread(t, []);
    refreshThreads();
    $('input').focus();
    return t;
  }

  function refreshThreads() {
    if (!state.threadsSupported) { renderThreadList(state.thread ? [state.thread] : [], false); return; }
    loadThreads(false).catch(() => {});
  }

  async function openThread(id) {
    if (state.busy) { setStatus('Wait for the reply to finish before switching threads.'); return; }
    let t, page;
    try {
      t = await api('GET', `/v1/threads/${encodeURIComponent(id)}`);
      page = await api('GET', `/v1/threads/${encodeURIComponent(id)}/messages?limit=50`);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) {
        localStorage.removeItem(STORE_THREAD);
        setStatus('That thread no longer exists.');
        refreshThreads();
        return;
      }
      throw err;
    }
    await showThread(t, page.messages || [], page.next_before);
  }

  async function showThread(t, messages, nextBefore) {
    state.thread = t;
    localStorage.setItem(STORE_THREAD, t.id);
    clearPending();
    $('thread-title').textContent = threadLabel(t) === 'New thread' ? previewOf(messages) : threadLabel(t);
    $('thread-processor').textContent = t.processor;
    $('thread-processor').hidden = false;
    $('delete-thread').hidden = false;
    $('messages').replaceChildren(...messages.map(renderMessage));
    state.olderCursor = nextBefore || null;
    $('older').hidden = !state.olderCursor;
    refreshSuggestions();
    markCurrentThread();
    setStatus('');
    scrollDown();
    if (t.running_turn && t.running_turn.id) {
      reattach(t.id, t.running_turn.id);
    } else if (t.pending_elicitation) {
      showPending(t.pending_elicitation, t.pending_expires_at);
    }
  }

  // previewOf names an untitled thread by its first user message, as the
  // thread list does.
  function previewOf(messages) {
    const first = messages.find((m) => m.role === 'user' && m.message);
    if (!first) return 'New conversation';
    const text = first.message.replace(/\s+/g, ' ').trim();
    return text.length > 80 ? `${text.slice(0, 80)}…` : text;
  }

  async function loadOlder() {
    if (!state.thread || !state.olderCursor || $('older').disabled) return;
    $('older').disabled = true;
    let page;
    try {
      page = await api('GET', `/v1/threads/${encodeURIComponent(state.thread.id)}/messages?limit=50&before=${encodeURIComponent(state.olderCursor)}`);
    } finally {
      $('older').disabled = false;
    }
    const first = $('messages').firstChild;
    for (const m of page.messages || []) $('messages').insertBefore(renderMessage(m), first);
    state.olderCursor = page.next_before || null;
    $('older').hidden = !state.olderCursor;
    refreshSuggestions();
  }

  async function deleteThread() {
    if (!state.thread) return;
    if (!window.confirm('Delete this thread and its history?')) return;
    await api('DELETE', `/v1/threads/${encodeURIComponent(state.thread.id)}`);
    localStorage.removeItem(STORE_THREAD);
    state.thread = null;
    $('messages').replaceChildren();
    clearPending();
    $('thread-title').textContent = 'New conversation';
    $('thread-processor').hidden = true;
    $('delete-thread').hidden = true;
    refreshThreads();
  }

  // ---- turns -------------------------------------------------------------

  function setBusy(busy) {
    state.busy = busy;
    $('send').disabled = busy;
    $('composer').setAttribute('aria-busy', busy ? 'true' : 'false');
  }

  // The Stop button stops the reply being written, on whichever instance
  // writes it; the stream then ends with what was kept, marked stopped.
  function showStop(turn) {
    state.streaming = turn;
    $('stop').hidden = !turn;
    $('stop').disabled = false;
  }

  async function stopTurn() {
    const turn = state.streaming;
    if (!turn || !turn.turnID) return;
    $('stop').disabled = true;
    const resp = await request('POST', `/v1/threads/${encodeURIComponent(turn.threadID)}/cancel`, { body: { turn_id: turn.turnID } });
    // 409: the reply ended meanwhile, and its stream shows how.
    if (!resp.ok && resp.status !== 409) {
      const data = await resp.json().catch(() => null);
      showError(new Problem(resp.status, data));
      $('stop').disabled = false;
      return;
    }
    await resp.body?.cancel().catch(() => {});
  }

  // streamingItem is the assistant message being written.
  function streamingItem() {
    const item = el('li', { class: 'msg msg-assistant streaming' },
      el('div', { class: 'msg-head' }, el('span', { class: 'msg-role', text: 'Assistant' }), el('span', { class: 'typing', 'aria-label': 'writing' }, el('span'), el('span'), el('span'))));
    const text = el('div', { class: 'msg-text' });
    item.append(text);
    $('messages').append(item);
    scrollDown();
    return { item, text, status: null };
  }

  function newIdempotencyKey() {
    return crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`;
  }

  async function send(text) {
    text = String(text || '').trim();
    if ((!text && state.attachments.length === 0) || state.busy) return;
    if (state.pending && pendingExpired()) clearPending();
    if (state.pending) { setStatus('Answer the question first (or cancel it).'); return; }
    setBusy(true);
    try {
      if (!state.thread) await newThread($('processor').value);
      const threadID = state.thread.id;
      $('input').value = '';
      const files = await uploadAttachments(threadID);
      state.attachments = [];
      renderAttachments();
      if (!$('messages').querySelector('.msg-user')) $('thread-title').textContent = previewOf([{ role: 'user', message: text }]);
      const optimistic = appendMessage({ id: '', role: 'user', message: text, content_blocks: files, timestamp: new Date().toISOString() });
      optimistic.classList.add('sending');
      const body = files.length ? { message: text, content_blocks: files } : { message: text };
      await runTurn(`/v1/threads/${encodeURIComponent(threadID)}/turns`, body, optimistic, true);
    } catch (err) {
      showError(err);
    } finally {
      setBusy(false);
      refreshThreads();
    }
  }

  // runTurn posts a turn or an answer as a stream and follows it to the end.
  // userItem is the optimistic user message to replace with the recorded
  // one (null for an answer, whose recorded message comes with the result).
  async function runTurn(path, body, userItem, idempotent) {
    const threadID = state.thread.id;
    const extraHeaders = idempotent ? { 'Idempotency-Key': newIdempotencyKey() } : {};
    const resp = await request('POST', path, { body, accept: 'text/event-stream', extraHeaders });
    const type = resp.headers.get('Content-Type') || '';
    if (!type.startsWith('text/event-stream')) {
      const data = await resp.json().catch(() => null);
      if (!resp.ok) {
        giveBack(userItem);
        throw new Problem(resp.status, data);
      }
      if (userItem) userItem.remove();
      finishTurn(data, null, null);
      return;
    }
    const live = streamingItem();
    const turn = { threadID, turnID: null, lastID: null, done: false };
    try {
      turn.lastID = await readEvents(resp, (ev) => onTurnEvent(ev, turn, live, userItem));
    } catch (err) {
      if (turn.done) return;
    }
    if (!turn.done && turn.turnID) {
      // The connection ended early: pick the turn up where it stopped.
      await followTurn(threadID, turn, live, userItem);
      showStop(null);
    } else if (!turn.done) {
      live.item.remove();
      throw new Error('The connection closed before the reply started.');
    }
  }

  function onTurnEvent(ev, turn, live, userItem) {
    let data;
    try { data = JSON.parse(ev.data); } catch { return false; }
    switch (ev.event) {
      case 'message.start':
        turn.turnID = data.turn_id || null;
        if (userItem && data.user_message_id) userItem.dataset.id = data.user_message_id;
        if (data.message_id) live.item.dataset.id = data.message_id;
        showStop(turn);
        return false;
      case 'text.delta':
        if (typeof data.delta === 'string') live.text.textContent += data.delta;
        if (data._meta && data._meta[META.status]) {
          const s = statusItem(data._meta[META.status]);
          if (s) { if (live.status) live.status.replaceWith(s); else live.item.insertBefore(s, live.text); live.status = s; }
        }
        scrollDown();
        return false;
      case 'turn.completed':
        turn.done = true;
        showStop(null);
        finishTurn(data, live, userItem);
        return true;
      case 'error':
        // Nothing of a failed turn is kept: its message goes back to the
        // composer to try again.
        turn.done = true;
        showStop(null);
        live.item.remove();
        giveBack(userItem);
        showError(new Problem(data.status || 500, data));
        return true;
    }
    return false;
  }

  // giveBack removes the message of a turn that was not kept and puts its
  // text back in the composer.
  function giveBack(userItem) {
    if (!userItem) return;
    const text = userItem.querySelector('.msg-text');
    if (text && !$('input').value) $('input').value = text.textContent;
    userItem.remove();
  }

  // finishTurn shows a TurnResult: the recorded user message, the reply,
  // and the question when the turn paused.
  function finishTurn(result, live, userItem) {
    if (userItem) userItem.remove();
    if (live) live.item.remove();
    if (result.user_message) appendMessage(result.user_message);
    if (result.message) appendMessage(result.message);
    if (result.status === 'input_required' && result.elicitation) {
      showPending(result.elicitation, result.elicitation_expires_at);
    }
    setStatus('');
  }

  // followTurn reads a running turn's events from the reattach endpoint,
  // after turn.lastID when set, until it ends.
  async function followTurn(threadID, turn, live, userItem) {
    for (let attempt = 0; attempt < 5 && !turn.done; attempt++) {
      const extraHeaders = turn.lastID ? { 'Last-Event-ID': turn.lastID } : {};
      const resp = await request('GET', `/v1/threads/${encodeURIComponent(threadID)}/turns/${encodeURIComponent(turn.turnID)}/events`,
        { accept: 'text/event-stream', extraHeaders });
      if (!resp.ok || !(resp.headers.get('Content-Type') || '').startsWith('text/event-stream')) {
        await resp.body?.cancel().catch(() => {});
        break;
      }
      if (!turn.lastID) live.text.textContent = '';
      try {
        const last = await readEvents(resp, (ev) => onTurnEvent(ev, turn, live, userItem));
        if (last) turn.lastID = last;
      } catch { /* retried below */ }
    }
    if (!turn.done) {
      // The events are gone (the turn ended long ago): history has it.
      live.item.remove();
      if (state.thread && state.thread.id === threadID) await openThread(threadID);
    }
  }

  async function reattach(threadID, turnID) {
    setBusy(true);
    setStatus('Reconnected to a reply in progress…');
    const live = streamingItem();
    const turn = { threadID, turnID, lastID: null, done: false };
    showStop(turn);
    try {
      await followTurn(threadID, turn, live, null);
    } catch (err) {
      showError(err);
    } finally {
      showStop(null);
      setBusy(false);
      if (state.pending === null) setStatus('');
      refreshThreads();
    }
  }

  function showError(err) {
    if (err instanceof Problem) {
      if (err.code === 'elicitation_pending' && err.body.elicitation) {
        showPending(err.body.elicitation, err.body.elicitation_expires_at);
        setStatus('The assistant is waiting for an answer to its question.', 'error');
        return;
      }
      if (err.code === 'thread_busy') { setStatus('The assistant is still answering; try again in a moment.', 'error'); return; }
      setStatus(err.message, 'error');
      return;
    }
    setStatus(`Something went wrong: ${err && err.message ? err.message : err}`, 'error');
  }

  // ---- elicitation ---------------------------------------------------------

  function clearPending() {
    state.pending = null;
    clearInterval(state.expiryTimer);
    $('pending').hidden = true;
    $('pending').replaceChildren();
    const dialog = $('confirm-dialog');
    if (dialog.open) { dialog.dataset.ignore = 'true'; dialog.close(); }
    $('input').disabled = false;
    refreshSuggestions();
  }

  function elicitationID(req) {
    return req && req._meta && req._meta[META.elicitationID];
  }

  function showPending(req, expiresAt) {
    clearPending();
    const schema = req.requestedSchema || {};
    const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
    state.pending = { request: req, expiresAt: expiresAt ? new Date(expiresAt) : null };
    $('input').disabled = true;
    refreshSuggestions();
    if (req.mode === 'url') showConsent(req);
    else if (Object.keys(props).length === 0) showConfirm(req);
    else showForm(req, schema, props);
    tickExpiry();
    state.expiryTimer = setInterval(tickExpiry, 1000);
  }

  function expiryText() {
    const at = state.pending && state.pending.expiresAt;
    if (!at || isNaN(at)) return '';
    const left = Math.round((at - Date.now()) / 1000);
    if (left <= 0) return 'This question has expired.';
    const mins = Math.floor(left / 60);
    const secs = left % 60;
    const inText = mins > 0 ? `${mins} min ${String(secs).padStart(2, '0')} s` : `${secs} s`;
    return `Expires at ${at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })} (in ${inText}).`;
  }

  function pendingExpired() {
    const at = state.pending && state.pending.expiresAt;
    return !!at && !isNaN(at) && at <= Date.now();
  }

  function tickExpiry() {
    if (!state.pending) return;
    const text = expiryText();
    for (const id of ['form-expiry', 'confirm-expiry', 'consent-expiry']) { const n = $(id); if (n) n.textContent = text; }
    if (pendingExpired()) {
      clearInterval(state.expiryTimer);
      for (const b of document.querySelectorAll('#pending button[type="submit"], #consent-done, #confirm-yes, #confirm-no')) b.disabled = true;
      $('input').disabled = false;
    }
  }

  function showConfirm(req) {
    const dialog = $('confirm-dialog');
    $('confirm-message').textContent = String(req.message || 'Are you sure?');
    for (const b of dialog.querySelectorAll('button')) b.disabled = false;
    // A note in the log too, so the question is visible after the dialog closes.
    $('pending').hidden = false;
    $('pending').replaceChildren(el('div', { class: 'confirm-note' },
      el('p', { text: String(req.message || '') }),
      el('button', { type: 'button', class: 'secondary', onclick: () => { if (!dialog.open) dialog.showModal(); }, text: 'Answer…' })));
    dialog.returnValue = '';
    delete dialog.dataset.ignore;
    dialog.showModal();
    $('confirm-yes').focus();
  }

  $('confirm-dialog').addEventListener('close', () => {
    const dialog = $('confirm-dialog');
    if (dialog.dataset.ignore) { delete dialog.dataset.ignore; return; }
    const action = dialog.returnValue;
    if (!state.pending || !['accept', 'decline', 'cancel'].includes(action)) return;
    answer(action, action === 'accept' ? {} : undefined);
  });
  // Escape closes a dialog without a value: it means cancel.
  $('confirm-dialog').addEventListener('cancel', (e) => {
    e.preventDefault();
    $('confirm-dialog').close('cancel');
  });

  // consentURL returns the URL of a URL-mode question when the page may
  // link to it — https, or http to a loopback host, without credentials —
  // and null otherwise (chatd checks the same before it asks).
  function consentURL(raw) {
    let u;
    try { u = new URL(String(raw)); } catch { return null; }
    if (u.username || u.password) return null;
    const loopback = u.hostname === 'localhost' || u.hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(u.hostname);
    if (u.protocol === 'https:' || (u.protocol === 'http:' && loopback)) return u;
    return null;
  }

  // showConsent shows a URL-mode question: the whole URL with its host in
  // bold, so the user sees where they are sent; the page opens only when
  // they click it (a new tab that cannot reach back to chatd's); Done says
  // they finished there, Cancel that they will not.
  function showConsent(req) {
    const u = consentURL(req.url);
    const card = el('div', { class: 'consent', role: 'group', 'aria-label': 'A page to visit' },
      el('p', { class: 'consent-message', text: String(req.message || 'Please open this page.') }));
    if (u) {
      const rest = u.href.slice(u.protocol.length + 2 + u.host.length);
      card.append(el('p', { class: 'consent-url' },
        el('a', { id: 'consent-open', href: u.href, target: '_blank', rel: 'noopener noreferrer' },
          `${u.protocol}//`, el('strong', { class: 'consent-host', text: u.host }), rest)),
      el('p', { class: 'consent-hint', text: 'Opens in a new tab. Come back here when you are done.' }));
    } else {
      card.append(el('p', { class: 'consent-hint', text: 'This page cannot be shown here.' }));
    }
    card.append(el('p', { id: 'consent-expiry', class: 'expiry' }),
      el('div', { class: 'actions' },
        el('button', { type: 'button', id: 'consent-done', disabled: !u, onclick: () => answer('accept'), text: 'Done' }),
        el('button', { type: 'button', id: 'consent-cancel', class: 'secondary', onclick: () => answer('cancel'), text: 'Cancel' })));
    $('pending').hidden = false;
    $('pending').replaceChildren(card);
  }

  // widgetOf returns the widget hint for a property ('' when none).
  function widgetOf(req, name) {
    const w = req._meta && req._meta[META.widgets] && req._meta[META.widgets][name];
    return w && typeof w === 'object' ? w : {};
  }

  function optionsOf(p) {
    if (Array.isArray(p.oneOf)) return p.oneOf.map((o) => ({ value: String(o.const), label: String(o.title || o.const) }));
    if (Array.isArray(p.enum)) return p.enum.map((v, i) => ({ value: String(v), label: String((p.enumNames && p.enumNames[i]) || v) }));
    return null;
  }

  function multiOptionsOf(p) {
    const items = p.items || {};
    if (Array.isArray(items.anyOf)) return items.anyOf.map((o) => ({ value: String(o.const), label: String(o.title || o.const) }));
    if (Array.isArray(items.enum)) return items.enum.map((v) => ({ value: String(v), label: String(v) }));
    return [];
  }

  let fieldSeq = 0;

  function showForm(req, schema, props) {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const form = el('form', { class: 'elicitation', novalidate: true, 'aria-labelledby': 'form-title' });
    form.append(el('h3', { id: 'form-title', text: String(req.message || 'The assistant asks') }));
    form.append(el('p', { id: 'form-expiry', class: 'hint expiry' }));
    const summary = el('div', { class: 'form-errors', role: 'alert', hidden: true });
    form.append(summary);
    const fields = [];
    for (const [name, p] of Object.entries(props)) {
      const f = buildField(name, p || {}, required.has(name), widgetOf(req, name));
      fields.push(f);
      form.append(f.wrap);
    }
    form.append(el('div', { class: 'actions' },
      el('button', { type: 'submit', value: 'accept', text: 'Submit' }),
      el('button', { type: 'button', class: 'secondary', text: 'Decline', onclick: () => answer('decline') }),
      el('button', { type: 'button', class: 'secondary', text: 'Cancel', onclick: () => answer('cancel') })));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const content = {};
      for (const f of fields) {
        const v = f.value();
        if (v !== undefined) content[f.name] = v;
      }
      answer('accept', content);
    });
    state.pending.fields = fields;
    state.pending.summary = summary;
    $('pending').hidden = false;
    $('pending').replaceChildren(form);
    scrollDown();
    const first = form.querySelector('input, select, textarea');
    if (first) first.focus({ preventScroll: true });
  }

  // buildField makes the control for one property: {name, wrap, value(),
  // setError(text)}. Widget hints pick a control where one fits; anything
  // else falls back to the plain control for the property's type.
  function buildField(name, p, isRequired, widget) {
    const id = `f${++fieldSeq}`;
    const label = String(p.title || name);
    const hintID = `${id}-hint`;
    const errID = `${id}-error`;
    const wrap = el('div', { class: 'field', 'data-field': name });
    const err = el('p', { id: errID, class: 'field-error', hidden: true });
    const hint = p.description ? el('p', { id: hintID, class: 'hint', text: String(p.description) }) : null;
    const describedBy = [hint ? hintID : null, errID].filter(Boolean).join(' ');
    const labelNode = (forID) => el('label', { for: forID }, label, isRequired ? el('span', { class: 'req', 'aria-hidden': 'true', text: ' *' }) : null);
    let control; // the element that gets aria-invalid
    let value;

    const options = p.type === 'string' ? optionsOf(p) : null;
    if (p.type === 'array') {
      const opts = multiOptionsOf(p);
      const fs = el('fieldset', { class: 'choices', 'aria-describedby': describedBy, 'aria-required': isRequired ? 'true' : null },
        el('legend', {}, label, isRequired ? el('span', { class: 'req', 'aria-hidden': 'true', text: ' *' }) : null));
      const defaults = Array.isArray(p.default) ? p.default.map(String) : [];
      opts.forEach((o, i) => {
        const oid = `${id}-${i}`;
        fs.append(el('div', { class: 'choice' },
          el('input', { type: 'checkbox', id: oid, name, value: o.value, checked: defaults.includes(o.value) }),
          el('label', { for: oid, text: o.label })));
      });
      const bounds = [];
      if (p.minItems !== undefined) bounds.push(`at least ${p.minItems}`);
      if (p.maxItems !== undefined) bounds.push(`at most ${p.maxItems}`);
      if (bounds.length) fs.append(el('p', { class: 'hint', text: `Pick ${bounds.join(' and ')}.` }));
      wrap.append(fs);
      control = fs;
      value = () => {
        const picked = [...fs.querySelectorAll('input:checked')].map((c) => c.value);
        return picked.length || isRequired ? picked : undefined;
      };
    } else if (options) {
      const useRadios = widget.widget === 'radios' || widget.widget === 'radio';
      if (useRadios) {
        const fs = el('fieldset', { class: 'choices', role: 'radiogroup', 'aria-describedby': describedBy, 'aria-required': isRequired ? 'true' : null },
          el('legend', {}, label, isRequired ? el('span', { class: 'req', 'aria-hidden': 'true', text: ' *' }) : null));
        options.forEach((o, i) => {
          const oid = `${id}-${i}`;
          fs.append(el('div', { class: 'choice' },
            el('input', { type: 'radio', id: oid, name: `${id}-radio`, value: o.value, checked: p.default === o.value }),
            el('label', { for: oid, text: o.label })));
        });
        wrap.append(fs);
        control = fs;
        value = () => { const c = fs.querySelector('input:checked'); return c ? c.value : undefined; };
      } else {
        const select = el('select', { id, name, 'aria-describedby': describedBy, 'aria-required': isRequired ? 'true' : null });
        if (p.default === undefined) select.append(el('option', { value: '', text: isRequired ? 'Choose…' : '(none)' }));
        for (const o of options) select.append(el('option', { value: o.value, selected: p.default === o.value, text: o.label }));
        wrap.append(labelNode(id), select);
        control = select;
        value = () => (select.value === '' ? undefined : select.value);
      }
    } else if (p.type === 'boolean') {
      const input = el('input', { type: 'checkbox', id, name, checked: p.default === true, 'aria-describedby': describedBy,
        role: widget.widget === 'toggle' || widget.widget === 'switch' ? 'switch' : null });
      wrap.classList.add('field-check');
      wrap.append(input, labelNode(id));
      control = input;
      value = () => input.checked;
    } else if (p.type === 'number' || p.type === 'integer') {
      const step = typeof widget.step === 'number' ? widget.step : (p.type === 'integer' ? 1 : 'any');
      const input = el('input', { type: 'number', id, name, inputmode: p.type === 'integer' ? 'numeric' : 'decimal', min: p.minimum, max: p.maximum, step,
        value: p.default, 'aria-describedby': describedBy, 'aria-required': isRequired ? 'true' : null });
      wrap.append(labelNode(id), input);
      control = input;
      value = () => {
        if (input.value === '') return input.validity.badInput ? NaN : undefined;
        return Number(input.value);
      };
      const bounds = [];
      if (p.minimum !== undefined) bounds.push(`from ${p.minimum}`);
      if (p.maximum !== undefined) bounds.push(`to ${p.maximum}`);
      if (bounds.length && !hint) wrap.append(el('p', { class: 'hint', text: `A ${p.type === 'integer' ? 'whole number' : 'number'} ${bounds.join(' ')}.` }));
    } else {
      const fmt = p.format;
      const w = widget.widget || '';
      const multiline = w === 'textarea' || w === 'textfield_multiline';
      const type = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' }[fmt] || 'text';
      const attrs = { id, name, 'aria-describedby': describedBy, 'aria-required': isRequired ? 'true' : null,
        minlength: p.minLength, maxlength: p.maxLength };
      let input;
      if (multiline) {
        input = el('textarea', { ...attrs, rows: 3 });
        if (typeof p.default === 'string') input.value = p.default;
      } else {
        input = el('input', { ...attrs, type, value: fmt === 'date-time' ? toLocalInput(p.default) : p.default,
          autocomplete: fmt === 'email' ? 'email' : 'off',
          placeholder: w === 'entity_autocomplete' ? `Search ${widget.target_type || 'content'}…` : (fmt === 'uri' ? 'https://' : null) });
      }
      wrap.append(labelNode(id), input);
      control = input;
      value = () => {
        if (input.value === '') return undefined;
        if (fmt === 'date-time') { const d = new Date(input.value); return isNaN(d) ? input.value : d.toISOString(); }
        return input.value;
      };
    }
    if (hint) wrap.append(hint);
    wrap.append(err);
    return {
      name, wrap, value,
      setError(text) {
        err.textContent = text || '';
        err.hidden = !text;
        if (text) control.setAttribute('aria-invalid', 'true'); else control.removeAttribute('aria-invalid');
        wrap.classList.toggle('invalid', !!text);
      },
      focus() { (control.matches('fieldset') ? control.querySelector('input') : control).focus(); },
    };
  }

  function toLocalInput(v) {
    if (typeof v !== 'string') return undefined;
    const d = new Date(v);
    if (isNaN(d)) return undefined;
    const pad = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }

  async function answer(action, content) {
    const p = state.pending;
    if (!p || state.busy) return;
    const eid = elicitationID(p.request);
    const body = { action };
    if (content !== undefined) body.content = content;
    setBusy(true);
    for (const b of $('pending').querySelectorAll('button')) b.disabled = true;
    try {
      await runTurn(`/v1/threads/${encodeURIComponent(state.thread.id)}/elicitations/${encodeURIComponent(eid)}`, body, null, false);
      if (state.pending === p) clearPending();
    } catch (err) {
      for (const b of $('pending').querySelectorAll('button')) b.disabled = false;
      if (err instanceof Problem && err.code === 'validation_failed' && p.fields) {
        showFieldErrors(p, err.body.errors || []);
      } else if (err instanceof Problem && ['elicitation_expired', 'elicitation_consumed', 'elicitation_not_found'].includes(err.code)) {
        clearPending();
        setStatus(err.code === 'elicitation_expired' ? 'That question expired before it was answered. Ask again.' : 'That question was already answered.', 'error');
        if (state.thread) openThread(state.thread.id).catch(showError);
      } else {
        if (err instanceof Problem && err.code === 'validation_failed' && !p.fields) {
          // A confirm has no fields to show errors at.
          $('confirm-dialog').showModal();
        }
        showError(err);
      }
    } finally {
      setBusy(false);
      refreshThreads();
    }
  }

  function showFieldErrors(p, errors) {
    const byField = new Map();
    const other = [];
    for (const e of errors) {
      const name = String(e.field || '').replace(/^content\.?/, '');
      if (p.fields.some((f) => f.name === name)) byField.set(name, [...(byField.get(name) || []), String(e.detail)]);
      else other.push(String(e.detail));
    }
    let first = null;
    for (const f of p.fields) {
      const msgs = byField.get(f.name);
      f.setError(msgs ? msgs.join('; ') : '');
      if (msgs && !first) first = f;
    }
    const n = errors.length;
    p.summary.hidden = false;
    p.summary.replaceChildren(el('p', { text: `Please fix ${n === 1 ? 'one field' : `${n} fields`}.${other.length ? ' ' + other.join('; ') : ''}` }));
    setStatus('');
    if (first) first.focus();
  }

  // ---- start -----------------------------------------------------------

  $('composer').addEventListener('submit', (e) => { e.preventDefault(); send($('input').value); });
  $('stop').addEventListener('click', () => { stopTurn().catch(showError); });
  $('attach').addEventListener('click', () => $('file-input').click());
  $('file-input').addEventListener('change', (e) => { addFiles(e.target.files); e.target.value = ''; });
  $('input').addEventListener('paste', (e) => {
    const files = e.clipboardData && e.clipboardData.files;
    if (files && files.length) { e.preventDefault(); addFiles(files); }
  });
  document.querySelector('.chat').addEventListener('dragover', (e) => {
    if (e.dataTransfer && [...e.dataTransfer.types].includes('Files')) { e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; }
  });
  document.querySelector('.chat').addEventListener('drop', (e) => {
    if (e.dataTransfer && e.dataTransfer.files.length) { e.preventDefault(); addFiles(e.dataTransfer.files); }
  });
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send($('input').value); }
  });
  $('new-thread').addEventListener('submit', (e) => { e.preventDefault(); if (!state.busy) newThread($('processor').value).catch(showError); });
  $('processor').addEventListener('change', describeProcessor);
  $('older').addEventListener('click', () => loadOlder().catch(showError));
  $('more-threads').addEventListener('click', () => loadThreads(true).catch(showError));
  $('delete-thread').addEventListener('click', () => deleteThread().catch(showError));

  async function start() {
    try {
      await loadProcessors();
      const threads = await loadThreads(false);
      const remembered = localStorage.getItem(STORE_THREAD);
      if (remembered) await openThread(remembered);
      else if (threads.length) await openThread(threads[0].id);
    } catch (err) {
      if (err instanceof Problem && err.status === 401) {
        setStatus('This chatd authenticates through a gateway; open the page through it.', 'error');
        return;
      }
      showError(err);
    }
    document.body.dataset.ready = 'true';
  }
  start();
})();
