// Checks claimd's OpenAPI document and answers against it (tests/integration/test_openapi.py
// runs it):
//     node openapi.mjs DOC.json SAMPLES.json
// DOC is the document as claimd serves it; SAMPLES a JSON array of answers claimd gave:
//     {"method": "get", "path": "/v1/jobs/{id}", "status": 200, "type": "application/json",
//      "body": <the parsed JSON body, or the text>}
// The document is validated against the OpenAPI 3.1 schema (@seriousme/openapi-schema-validator);
// each answer against its operation's response for its status and content type (Ajv in strict
// mode, JSON Schema 2020-12, formats checked). Prints one JSON object: {"valid": bool, "errors": [...], "operations":
// [every "method path" of the document], "answered": [those a sample answered with a 2xx]}.
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const [docPath, samplesPath] = process.argv.slice(2);
const doc = JSON.parse(readFileSync(docPath, 'utf8'));
const samples = JSON.parse(readFileSync(samplesPath, 'utf8'));
const errors = [];

const checked = await new Validator().validate(doc);
if (!checked.valid)
  errors.push({ where: 'document', errors: checked.errors });

// Strict: a keyword Ajv does not know, a type left out where a keyword needs one, and the like
// are errors in the document, not things to pass over. The components' schemas are $defs of a
// schema of their own, which the answers' schemas refer to.
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
const local = (schema) =>
  JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"claimd-api#/$defs/'));
ajv.addSchema(local({ $id: 'claimd-api', $defs: doc.components?.schemas || {} }));

const methods = ['get', 'put', 'post', 'delete', 'patch', 'head'];
const operations = [];
for (const [path, item] of Object.entries(doc.paths))
  for (const m of methods)
    if (item[m])
      operations.push(`${m} ${path}`);

const answered = new Set();
for (const s of samples) {
  const where = `${s.method} ${s.path} ${s.status}`;
  const op = doc.paths[s.path]?.[s.method];
  if (!op) {
    errors.push({ where, errors: 'no such operation in the document' });
    continue;
  }
  const res = op.responses?.[String(s.status)];
  if (!res) {
    errors.push({ where, errors: `status ${s.status} is not among the documented ${Object.keys(op.responses)}` });
    continue;
  }
  if (s.status < 300)
    answered.add(`${s.method} ${s.path}`);
  const type = (s.type || '').split(';')[0].trim();
  const media = res.content?.[type];
  if (!media) {
    errors.push({ where, errors: `content type ${type} is not documented (${Object.keys(res.content || {})})` });
    continue;
  }
  if (!media.schema)
    continue;
  const validate = ajv.compile(local(media.schema));
  if (!validate(s.body))
    errors.push({ where, errors: validate.errors, body: s.body });
}

console.log(JSON.stringify({ valid: errors.length === 0, errors, operations,
  answered: [...answered] }));
