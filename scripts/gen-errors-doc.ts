import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Catalogue } from '../src/catalogue.ts'
import { catalogueOf } from '../src/context.ts'
import { problemSlug } from '../src/errors.ts'

export const ERRORS_DOC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'errors.md')

function cell (s: string): string {
  return s.replaceAll('|', '\\|')
}

/** docs/errors.md, generated from the service's catalogue (`npm run docs:errors`): the core's codes and the registry's. */
export function renderErrorsDoc (catalogue: Catalogue = catalogueOf()): string {
  const problems = Object.entries(catalogue.problems)
    .map(([code, p]) => `| \`${code}\` | ${p.status} | ${cell(p.title)} | ${cell(p.detail)} | [\`/problems/${problemSlug(code)}\`](#${problemSlug(code)}) |`)
    .join('\n')
  const fields = Object.entries(catalogue.fieldCodes).map(([code, text]) => `| \`${code}\` | ${cell(text)} |`).join('\n')
  const byStatus = new Map<number, string[]>()
  for (const [code, p] of Object.entries(catalogue.problems)) byStatus.set(p.status, [...(byStatus.get(p.status) ?? []), code])
  const statuses = [...byStatus].sort(([a], [b]) => a - b).map(([s, codes]) => `| ${s} | ${codes.map(c => `\`${c}\``).join(', ')} |`).join('\n')
  const sections = Object.entries(catalogue.problems)
    .map(([code, p]) => `### ${problemSlug(code)}\n\n\`${code}\`, HTTP ${p.status}, "${p.title}". ${p.detail}\n`)
    .join('\n')

  return `<!-- Generated from the catalogue (src/catalogue.ts) by \`npm run docs:errors\`. Do not edit by hand: a test fails when this file is out of date. -->
# Error catalogue

Every error the service sends is one JSON body of type \`application/problem+json\`
([RFC 9457](https://www.rfc-editor.org/rfc/rfc9457)):

\`\`\`json
{
  "type": "/problems/validation-failed",
  "title": "Validation failed",
  "status": 422,
  "detail": "The request is well-formed but some values are invalid; see errors.",
  "instance": "/posts",
  "code": "VALIDATION_FAILED",
  "errors": [{ "field": "title", "code": "BLANK", "message": "must not be blank" }],
  "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
  "request_id": "9f0c2d7e-1b5a-4c1e-8f44-3a1d2b6c7e80"
}
\`\`\`

- \`code\` is stable: program against it, not against \`title\` or \`detail\`, whose wording may
  change.
- The same problem always gives the same \`status\` and \`code\`.
- \`type\` is a page the service itself serves (\`GET /problems/<code-in-kebab-case>\`).
- \`instance\` is the path of the request; \`trace_id\` is the W3C trace-id of its \`traceparent\`
  header, \`request_id\` its \`X-Request-Id\`. Quote both when you report a problem.
- \`errors\` appears only on 422 \`VALIDATION_FAILED\`: one entry per violated constraint.
- Error responses are never cached (\`Cache-Control: no-store\`); 429 and 503 carry \`Retry-After\`.
- No stack trace, SQL or internal message ever appears in a body.

## Codes

| code | status | title | when it happens | type |
|---|---|---|---|---|
${problems}

## By status

| status | codes |
|---|---|
${statuses}

## Field codes of \`errors[]\`

In a 422 \`VALIDATION_FAILED\` body, each entry of \`errors\` is \`{field, code, message}\`.
\`field\` is a JSON Pointer-like path without the leading slash (\`title\`, \`items/0/quantity\`),
or the name of a query parameter (\`limit\`). \`message\` is for a person: the rule that was broken,
read after the field's name, in the language of \`Accept-Language\` like \`title\` and \`detail\`
(\`title\`: "must not be blank", "must be at most 200 characters"; in German "darf nicht leer sein").
Its wording may change; \`code\` does not. \`code\` is one of:

| code | meaning |
|---|---|
${fields}

## Problem types

${sections}`
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  fs.mkdirSync(path.dirname(ERRORS_DOC), { recursive: true })
  fs.writeFileSync(ERRORS_DOC, renderErrorsDoc())
  process.stdout.write(`wrote ${path.relative(process.cwd(), ERRORS_DOC)}\n`)
}
