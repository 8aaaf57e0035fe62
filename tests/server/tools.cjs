// Tool calling through the official OpenAI Node client (npm `openai`) against basalt serve: tool_choice required and
// a named function return calls whose arguments validate against the tool's schema (finish_reason tool_calls);
// streamed tool-call deltas reassemble to the same calls; a tool round (assistant tool_calls + a tool message)
// renders and answers; bad tools and choices are 400s naming the field.
// node tools.cjs NODE_DIR BASE_URL MODEL
'use strict';
const path = require('path');
const assert = require('assert');
const [nodeDir, baseURL, model] = process.argv.slice(2);
const OpenAI = require(path.join(nodeDir, 'node_modules', 'openai'));

const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 120000 });
let checks = 0;
function ok(cond, what) {
  assert.ok(cond, what);
  checks++;
}

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather forecast of a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] },
          days: { type: 'integer', minimum: 1, maximum: 7 },
        },
        required: ['city', 'days'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      parameters: {
        type: 'object',
        properties: { a: { type: 'integer', minimum: 0, maximum: 99 }, b: { type: 'integer', minimum: 0, maximum: 99 } },
        required: ['a', 'b'],
        additionalProperties: false,
      },
    },
  },
];

// The keywords these schemas use.
function validate(value, schema) {
  if (schema.type === 'object') {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
    for (const k of schema.required || []) if (!(k in value)) return `missing ${k}`;
    for (const [k, v] of Object.entries(value)) {
      if (!(k in schema.properties)) return `extra property ${k}`;
      const why = validate(v, schema.properties[k]);
      if (why) return `${k}: ${why}`;
    }
    return null;
  }
  if (schema.enum && !schema.enum.includes(value)) return `${JSON.stringify(value)} not in enum`;
  if (schema.type === 'integer') {
    if (!Number.isInteger(value)) return `${JSON.stringify(value)} is not an integer`;
    if (value < schema.minimum || value > schema.maximum) return `${value} out of range`;
  }
  if (schema.type === 'string' && typeof value !== 'string') return 'not a string';
  return null;
}

function checkCall(call, what, name) {
  ok(call.type === 'function' && typeof call.id === 'string' && call.id.length > 0, `${what}: call shape`);
  const tool = tools.find((t) => t.function.name === call.function.name);
  ok(tool !== undefined && (name === undefined || call.function.name === name), `${what}: tool ${call.function.name}`);
  let args;
  try {
    args = JSON.parse(call.function.arguments);
  } catch (e) {
    assert.fail(`${what}: arguments are not JSON: ${call.function.arguments}`);
  }
  const why = validate(args, tool.function.parameters);
  ok(why === null, `${what}: arguments ${call.function.arguments} validate: ${why}`);
}

async function expect400(promise, param, text, what) {
  try {
    await promise;
  } catch (e) {
    ok(e instanceof OpenAI.BadRequestError, `${what}: ${e.constructor.name}: ${e.message}`);
    ok(e.param === param, `${what}: param ${e.param}, expected ${param}`);
    ok(e.message.includes(text), `${what}: '${e.message}' names ${text}`);
    return;
  }
  assert.fail(`${what}: no error`);
}

async function main() {
  const messages = [{ role: 'user', content: 'What is the weather in Paris for the next 3 days?' }];
  // The tiny test model wanders (the schema's whitespace, more calls): a reply cut by max_tokens is still calls,
  // and most replies end by themselves, each call validating.
  let first = null;
  let ended = 0;
  let asked = 0;
  for (let seed = 0; seed < 4; seed++) {
    for (const choice of ['required', { type: 'function', function: { name: 'add' } }]) {
      for (const parallel of [false, true]) {
        const what = `seed ${seed} tool_choice ${JSON.stringify(choice)} parallel ${parallel}`;
        const r = await client.chat.completions.create({
          model, messages, tools, tool_choice: choice, parallel_tool_calls: parallel, max_tokens: 300,
          temperature: 0.9, seed,
        });
        asked++;
        const c = r.choices[0];
        ok(c.message.content === null, `${what}: content null: ${JSON.stringify(c.message)}`);
        ok(Array.isArray(c.message.tool_calls) && c.message.tool_calls.length >= 1, `${what}: tool_calls`);
        ok(parallel || c.message.tool_calls.length === 1, `${what}: one call without parallel_tool_calls`);
        ok(['tool_calls', 'length'].includes(c.finish_reason), `${what}: finish_reason ${c.finish_reason}`);
        if (c.finish_reason !== 'tool_calls') continue;
        ended++;
        for (const call of c.message.tool_calls) checkCall(call, what, typeof choice === 'string' ? undefined : 'add');
        if (first === null) first = c.message;
      }
    }
  }
  ok(ended * 2 >= asked && first !== null, `most constrained replies end as calls (${ended} of ${asked})`);

  // Streamed: the deltas (id and name first, then argument pieces) reassemble to the non-streamed calls.
  for (let seed = 0; seed < 3; seed++) {
    const body = { model, messages, tools, tool_choice: 'required', max_tokens: 300, temperature: 0.9, seed };
    const whole = (await client.chat.completions.create(body)).choices[0];
    const stream = await client.chat.completions.create({ ...body, stream: true });
    const calls = [];
    let finish = null;
    let content = '';
    let pieces = 0;
    for await (const chunk of stream) {
      const ch = chunk.choices[0];
      if (!ch) continue;
      if (ch.delta.content) content += ch.delta.content;
      for (const d of ch.delta.tool_calls || []) {
        if (d.id !== undefined) {
          ok(calls[d.index] === undefined, 'a call opens once');
          calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: d.function.arguments } };
        } else {
          calls[d.index].function.arguments += d.function.arguments;
          pieces++;
        }
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    ok(finish === whole.finish_reason, `stream seed ${seed}: finish_reason ${finish}`);
    ok(content === '', `stream seed ${seed}: no content (${JSON.stringify(content)})`);
    ok(calls.length === whole.message.tool_calls.length, `stream seed ${seed}: as many calls`);
    calls.forEach((call, i) => {
      if (finish === 'tool_calls') checkCall(call, `stream seed ${seed}`);
      ok(call.function.name === whole.message.tool_calls[i].function.name, `stream seed ${seed}: same name`);
      ok(call.function.arguments === whole.message.tool_calls[i].function.arguments,
        `stream seed ${seed}: same arguments ${call.function.arguments} / ${whole.message.tool_calls[i].function.arguments}`);
    });
    ok(pieces >= 1, `stream seed ${seed}: arguments arrive in pieces`);
  }

  // A tool round: the assistant's calls and the tool's result render, and the model answers.
  const call = first.tool_calls[0];
  const round = await client.chat.completions.create({
    model,
    messages: [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: '{"forecast": "sunny"}' },
    ],
    tools, max_tokens: 16, seed: 1,
  });
  ok(round.choices[0].message.role === 'assistant', 'tool round: an answer');
  ok(['stop', 'length', 'tool_calls'].includes(round.choices[0].finish_reason), 'tool round: finish_reason');
  // auto: free text or calls; whichever comes back is well formed.
  const auto = await client.chat.completions.create({ model, messages, tools, max_tokens: 40, seed: 3 });
  const am = auto.choices[0].message;
  ok(typeof am.content === 'string' || (am.tool_calls && am.tool_calls.length > 0), 'auto: content or calls');
  for (const c of am.tool_calls || []) checkCall(c, 'auto');
  // none: never calls.
  const none = await client.chat.completions.create({ model, messages, tools, tool_choice: 'none', max_tokens: 20, seed: 3 });
  ok(none.choices[0].message.tool_calls === undefined && typeof none.choices[0].message.content === 'string', 'none: text');

  // Bad input: 400 naming the field.
  await expect400(client.chat.completions.create({ model, messages, tools: [{ type: 'code_interpreter' }] }),
    'tools', 'tools[0]', 'a tool that is not a function object');
  await expect400(client.chat.completions.create({ model, messages, tools: ['get_weather'] }),
    'tools', 'tools[0]', 'a tool that is a string');
  await expect400(client.chat.completions.create({
    model, messages, tools, tool_choice: { type: 'function', function: { name: 'launch' } },
  }), 'tool_choice', "'launch'", 'a named tool that does not exist');
  await expect400(client.chat.completions.create({ model, messages, tool_choice: 'required' }),
    'tool_choice', 'tools', 'required without tools');
  await expect400(client.chat.completions.create({ model, messages, tools, tool_choice: 'always' }),
    'tool_choice', 'always', 'an unknown tool_choice');
  const badSchema = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { type: 'string', allOf: [] } } } } }];
  await expect400(client.chat.completions.create({ model, messages, tools: badSchema, tool_choice: 'required' }),
    'tools', 'allOf', 'an invalid parameters schema (required)');
  await expect400(client.chat.completions.create({
    model, messages, tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }],
  }), 'tools', 'tools[0].function.parameters', 'parameters that are not a schema object');
  await expect400(client.chat.completions.create({
    model, messages, tools: [{ type: 'function', function: { name: 'bad name!' } }],
  }), 'tools', 'tools[0].function.name', 'a bad function name');
  await expect400(client.chat.completions.create({
    model, messages, tools, tool_choice: 'required', response_format: { type: 'json_object' },
  }), 'tool_choice', 'response_format', 'required with response_format');
  console.log(`tools.cjs: ${checks} checks passed`);
}

main().catch((e) => {
  console.error('FAIL', e);
  process.exit(1);
});
