// Validates an OpenRPC document with @open-rpc/schema-utils-js, as a JSON-RPC client's tooling would:
// validateOpenRPCDocument (the meta-schema, extended by the document's x-extensions), dereferenceDocument,
// then MethodCallValidator on sample params. Reads {document, calls: [{method, params}]} on stdin; prints
// {valid, dereferenced, calls: [{method, errors}]} as JSON.
import { validateOpenRPCDocument, dereferenceDocument, MethodCallValidator } from "@open-rpc/schema-utils-js";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => { text += chunk; });
  process.stdin.on("end", () => resolve(text));
}));
const report = { valid: null, dereferenced: false, calls: [] };
const validation = validateOpenRPCDocument(input.document);
report.valid = validation === true ? true : String(validation.message);
const dereferenced = await dereferenceDocument(structuredClone(input.document));
// Params and results are what the dereferencer resolves (error data and x- extensions are not schemas to it).
const resolved = dereferenced.methods.map((m) => [m.params, m.result ?? null]);
report.dereferenced = !JSON.stringify(resolved).includes('"$ref"');
const validator = new MethodCallValidator(dereferenced);
for (const call of input.calls ?? []) {
  const errors = validator.validate(call.method, call.params);
  report.calls.push({ method: call.method, errors: errors === true ? [] : errors.map((e) => String(e.message)) });
}
process.stdout.write(JSON.stringify(report));
