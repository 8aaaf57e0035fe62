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
