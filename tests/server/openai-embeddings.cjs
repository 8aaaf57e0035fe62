// The official OpenAI Node client's embeddings.create against basalt serve on an embedding model (docs/embeddings.md):
// a string, an array of strings, token ids, base64 (the client's default encoding, decoded by it), dimensions, and a
// refused input as the client's BadRequestError. node openai-embeddings.cjs NODE_DIR BASE_URL MODEL
'use strict';
const path = require('path');
const assert = require('assert');
const [nodeDir, baseURL, model] = process.argv.slice(2);
const OpenAI = require(path.join(nodeDir, 'node_modules', 'openai'));

const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 60000 });

function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

async function main() {
  const text = 'Once upon a time, the stranger opened the wooden box.';
  // The client asks for base64 unless told otherwise and decodes it into numbers.
  const one = await client.embeddings.create({ model, input: text });
  assert.strictEqual(one.object, 'list');
  assert.strictEqual(one.data.length, 1);
  assert.strictEqual(one.data[0].embedding.length, 64);
  assert.ok(Math.abs(norm(one.data[0].embedding) - 1) < 1e-5, 'L2-normalised by default');
  assert.strictEqual(one.usage.prompt_tokens, 19);
  const asFloat = await client.embeddings.create({ model, input: text, encoding_format: 'float' });
  for (let i = 0; i < 64; i++) assert.ok(Math.abs(asFloat.data[0].embedding[i] - one.data[0].embedding[i]) < 1e-7);
  const many = await client.embeddings.create({ model, input: [text, 'the wooden box', [101, 224, 282, 102]] });
  assert.deepStrictEqual(many.data.map((d) => d.index), [0, 1, 2]);
  for (let i = 0; i < 64; i++) assert.ok(Math.abs(many.data[0].embedding[i] - one.data[0].embedding[i]) < 1e-5);
  const small = await client.embeddings.create({ model, input: text, dimensions: 8 });
  assert.strictEqual(small.data[0].embedding.length, 8);
  assert.ok(Math.abs(norm(small.data[0].embedding) - 1) < 1e-5, 'truncated, then normalised');
  try {
    await client.embeddings.create({ model, input: ['ok', Array(200).fill(120)] });
    assert.fail('an input longer than the context was accepted');
  } catch (e) {
    assert.ok(e instanceof OpenAI.BadRequestError, e.constructor.name);
    assert.ok(/input 1/.test(e.message), e.message);
  }
  console.log('openai embeddings: ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
