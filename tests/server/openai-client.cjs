// The official OpenAI Node client (npm `openai`, pinned by scripts/setup.sh) against basalt serve: completions, chat,
// streaming, usage with cached prompt tokens, extensions, and error cases mapped to the client's error classes.
// node openai-client.cjs NODE_DIR BASE_URL API_KEY MODEL
'use strict';
const path = require('path');
const assert = require('assert');
const [nodeDir, baseURL, apiKey, model] = process.argv.slice(2);
const OpenAI = require(path.join(nodeDir, 'node_modules', 'openai'));

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
let checks = 0;
function ok(cond, what) {
  assert.ok(cond, what);
  checks++;
}

async function expectError(promise, Klass, status, what) {
  try {
    await promise;
  } catch (e) {
    ok(e instanceof Klass, `${what}: ${e.constructor.name} is not ${Klass.name}: ${e.message}`);
    ok(e.status === status, `${what}: status ${e.status}, expected ${status}`);
    ok(typeof e.message === 'string' && e.message.length > 0, `${what}: message`);
    return e;
  }
  assert.fail(`${what}: no error`);
}

async function main() {
  console.log('openai', require(path.join(nodeDir, 'node_modules', 'openai', 'package.json')).version);
  const models = await client.models.list();
  ok(models.data.some((m) => m.id === model), 'models.list has the served model');

  // Completions, greedy: deterministic; the streamed text equals the whole text.
  const prompt = 'The best way to';
  const c = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 0 });
  ok(c.object === 'text_completion' && c.choices.length === 1, 'completion shape');
  ok(typeof c.choices[0].text === 'string' && c.choices[0].text.length > 0, 'completion text');
  ok(['stop', 'length'].includes(c.choices[0].finish_reason), 'finish_reason');
  ok(c.usage.prompt_tokens > 0 && c.usage.completion_tokens > 0, 'usage counts');
  ok(c.usage.total_tokens === c.usage.prompt_tokens + c.usage.completion_tokens, 'usage total');
  const stream = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 0, stream: true });
  let streamed = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      streamed += ch.text;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  ok(streamed === c.choices[0].text, `streamed text ${JSON.stringify(streamed)} equals ${JSON.stringify(c.choices[0].text)}`);
  ok(finish === c.choices[0].finish_reason, 'streamed finish_reason');

  // Prefix cache: the same long prompt twice reuses cached prompt tokens.
  const long = 'A long prompt that fills more than one block of the cache: ' + 'the quick brown fox jumps over the lazy dog, '.repeat(4);
  await client.completions.create({ model, prompt: long, max_tokens: 2, temperature: 0 });
  const again = await client.completions.create({ model, prompt: long, max_tokens: 2, temperature: 0 });
  ok(again.usage.prompt_tokens_details.cached_tokens > 0, `cached prompt tokens ${JSON.stringify(again.usage)}`);

  // Chat, non-streaming and streaming with usage.
  const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Tell me a fortune.' }];
  const chat = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0 });
  ok(chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant', 'chat shape');
  ok(typeof chat.choices[0].message.content === 'string', 'chat content');
  const cs = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  let content = '';
  let role = null;
  let usage = null;
  for await (const chunk of cs) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.role) role = ch.delta.role;
      content += ch.delta.content || '';
    }
  }
  ok(role === 'assistant', 'streamed role');
  ok(content === chat.choices[0].message.content, 'streamed chat equals non-streamed');
  ok(usage && usage.completion_tokens === chat.usage.completion_tokens, 'stream usage (include_usage)');

  // Log-probabilities: completions (legacy object) and chat (content entries), non-streaming equals streaming.
  const near = (a, b) => Math.abs(a - b) < 1e-5;
  const lc = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 3 });
  const lp = lc.choices[0].logprobs;
  ok(lp && lp.tokens.length === lc.usage.completion_tokens, `completion logprobs: one per token ${JSON.stringify(lp)}`);
  ok(lp.token_logprobs.length === lp.tokens.length && lp.top_logprobs.length === lp.tokens.length &&
     lp.text_offset.length === lp.tokens.length, 'completion logprobs: parallel arrays');
  ok(lp.tokens.join('') === lc.choices[0].text, 'completion logprobs: tokens spell the text');
  let offset = 0;
  for (let i = 0; i < lp.tokens.length; i++) {
    ok(lp.text_offset[i] === offset, `text_offset ${i}`);
    offset += Buffer.byteLength(lp.tokens[i]);
    ok(lp.token_logprobs[i] <= 0, 'logprob <= 0');
    const top = Object.entries(lp.top_logprobs[i]);
    ok(top.length >= 1 && top.length <= 4, `top_logprobs dict size ${top.length}`);
    // greedy: the chosen token is the most likely one
    ok(near(Math.max(...top.map(([, v]) => v)), lp.token_logprobs[i]), 'greedy token is the top one');
    ok(near(lp.top_logprobs[i][lp.tokens[i]], lp.token_logprobs[i]), 'chosen token in its top dict');
  }
  const lcs = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 3, stream: true });
  const sTokens = [];
  const sLps = [];
  const sOffsets = [];
  for await (const chunk of lcs) {
    for (const ch of chunk.choices) {
      if (ch.logprobs) {
        sTokens.push(...ch.logprobs.tokens);
        sLps.push(...ch.logprobs.token_logprobs);
        sOffsets.push(...ch.logprobs.text_offset);
      }
    }
  }
  ok(sTokens.join('|') === lp.tokens.join('|'), 'streamed logprob tokens equal');
  ok(sLps.length === lp.token_logprobs.length && sLps.every((v, i) => near(v, lp.token_logprobs[i])), 'streamed logprobs equal');
  ok(sOffsets.join() === lp.text_offset.join(), 'streamed text_offset equal');
  const plain = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0 });
  ok(plain.choices[0].logprobs === null, 'no logprobs unless asked');

  const lchat = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2 });
  const content0 = lchat.choices[0].logprobs.content;
  ok(Array.isArray(content0) && content0.length === lchat.usage.completion_tokens, 'chat logprobs: one entry per token');
  for (const e of content0) {
    ok(typeof e.token === 'string' && e.logprob <= 0 && Array.isArray(e.bytes), 'chat entry shape');
    ok(Buffer.from(e.bytes).toString('utf8') === e.token || e.token.includes('\ufffd'), 'bytes spell the token');
    ok(e.top_logprobs.length === 2 && e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob, 'top_logprobs sorted');
    ok(e.top_logprobs[0].token === e.token && near(e.top_logprobs[0].logprob, e.logprob), 'greedy: chosen is top');
  }
  const lchatS = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, logprobs: true,
    top_logprobs: 2, stream: true });
  const sContent = [];
  for await (const chunk of lchatS) {
    for (const ch of chunk.choices) if (ch.logprobs) sContent.push(...ch.logprobs.content);
  }
  ok(sContent.length === content0.length && sContent.every((e, i) => e.token === content0[i].token &&
     near(e.logprob, content0[i].logprob) && e.top_logprobs.map((t) => t.token).join() ===
     content0[i].top_logprobs.map((t) => t.token).join()), 'streamed chat logprobs equal');
  const lchat0 = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, logprobs: true });
  ok(lchat0.choices[0].logprobs.content.every((e) => e.top_logprobs.length === 0), 'logprobs without top_logprobs');
  await expectError(client.chat.completions.create({ model, messages, top_logprobs: 2 }), OpenAI.BadRequestError, 400,
    'top_logprobs without logprobs');
  await expectError(client.chat.completions.create({ model, messages, logprobs: true, top_logprobs: 21 }),
    OpenAI.BadRequestError, 400, 'top_logprobs 21');
  await expectError(client.completions.create({ model, prompt, logprobs: 2, decoder: 'beam:width=2' }),
    OpenAI.BadRequestError, 400, 'logprobs with beam');

  // Several choices, seeded sampling, stop strings, penalties and bias, extensions.
  const multi = await client.completions.create({ model, prompt, max_tokens: 8, n: 3, seed: 11, temperature: 0.9 });
  ok(multi.choices.length === 3 && multi.choices.map((x) => x.index).join() === '0,1,2', 'n=3 choices');
  const multi2 = await client.completions.create({ model, prompt, max_tokens: 8, n: 3, seed: 11, temperature: 0.9 });
  ok(multi2.choices.map((x) => x.text).join('|') === multi.choices.map((x) => x.text).join('|'), 'seeded is reproducible');
  const stopped = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 40, temperature: 0, stop: ['e'] });
  ok(!stopped.choices[0].text.includes('e') && stopped.choices[0].finish_reason === 'stop', `stop string: ${JSON.stringify(stopped.choices[0])}`);
  const pen = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0.7, seed: 3,
    presence_penalty: 0.5, frequency_penalty: 0.5, logit_bias: { '5': -100 }, top_p: 0.9, user: 'tester' });
  ok(pen.choices[0].text.length > 0, 'penalties, logit_bias, top_p, user');
  const ext = await client.completions.create({ model, prompt, max_tokens: 8, samplers: 'greedy', cache_salt: 'tenant-a' });
  ok(ext.choices[0].text === c.choices[0].text.slice(0, ext.choices[0].text.length) || ext.choices[0].text.length > 0, 'samplers extension');
  const beam = await client.completions.create({ model, prompt, max_tokens: 6, samplers: 'greedy', decoder: 'beam:width=2' });
  ok(beam.choices[0].text.length > 0, 'decoder extension (beam)');
  const mink = await client.completions.create({ model, prompt, max_tokens: 6, temperature: 0.8, top_k: 20, min_p: 0.05, seed: 1 });
  ok(mink.choices[0].text.length > 0, 'top_k and min_p extensions');

  // Errors as the client's classes.
  await expectError(client.completions.create({ model, prompt, temperature: 5 }), OpenAI.BadRequestError, 400, 'temperature 5');
  await expectError(client.completions.create({ model: 'gpt-4', prompt }), OpenAI.NotFoundError, 404, 'unknown model');
  await expectError(client.chat.completions.create({ model, messages: [{ role: 'robot', content: 'x' }] }), OpenAI.BadRequestError, 400, 'bad role');
  await expectError(client.completions.create({ model, prompt, frobnicate: true }), OpenAI.BadRequestError, 400, 'unknown field');
  const noKey = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
  await expectError(noKey.models.list(), OpenAI.AuthenticationError, 401, 'wrong API key');
  // A stream the client aborts: the server stays healthy.
  const ac = new AbortController();
  const aborted = await client.completions.create({ model, prompt, max_tokens: 200, temperature: 0, stream: true, ignore_eos: true },
    { signal: ac.signal });
  try {
    for await (const chunk of aborted) { ac.abort(); }
  } catch (e) { /* aborted */ }
  const after = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0 });
  ok(after.choices[0].text.length > 0, 'healthy after an aborted stream');
  console.log(`openai client: ${checks} checks passed`);
}

main().catch((e) => {
  console.error('FAIL:', e && e.stack ? e.stack : e);
  process.exit(1);
});
