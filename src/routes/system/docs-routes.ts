import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { Catalogue } from '../../catalogue.ts'
import { AppError, type ProblemCode, problemSlug } from '../../errors.ts'
import { MAX_PAGE_SIZE } from '../../http/toolkit/paging.ts'
import type { Resource } from '../../http/contract/resources.ts'
import { problemResponses, SYSTEM_ERRORS } from '../../http/contract/schemas.ts'
import { DEFAULT_VERSION, vendorMediaType, versionChanges } from '../../http/protocol/versioning.ts'

function escapeHtml (s: string): string {
  return s.replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
}

/**
 * The Markdown the OpenAPI document and /docs show about the API as a whole: its resources, its
 * versions (as src/http/protocol/versioning.ts lists them), authentication, errors and limits.
 */
export function apiDescription (resources: readonly Resource[], catalogue: Catalogue): string {
  const paths = resources.map(r => `\`${r.path}\``).join(', ')
  const scopes = resources.flatMap(r => r.scopes ?? []).map(s => `\`${s}\``).join(', ')
  // The version text's example is the first resource the API serves (`things` → a thing, `thingId`).
  const thing = (resources[0]?.name ?? 'item').replace(/-/g, ' ').replace(/s$/, '')
  const versions = versionChanges(thing).map(({ version, changes }) => `Version ${version} (\`/v${version}/…\`, or \`Accept: ${vendorMediaType(version)}\` on any path): ${changes}`).join(' ')
  const rows = Object.entries(catalogue.problems).map(([code, p]) => `| ${p.status} | \`${code}\` | ${p.title}: ${p.detail} |`).join('\n')
  const fieldRows = Object.entries(catalogue.fieldCodes).map(([code, text]) => `| \`${code}\` | ${text} |`).join('\n')
  return `An HTTP/JSON API of ${paths}: each is described under its tag.

**Versions.** A path without a version prefix is version ${DEFAULT_VERSION}. ${versions}

**Authentication.** \`Authorization: Bearer <JWT or API key>\`. Reading what everyone may read needs none; the rest needs its resource's scope (${scopes}) or \`admin\`.

**Retries.** Every POST honours \`Idempotency-Key\`: the same key and body within 24 h answer the first response again (\`Idempotent-Replayed: true\`) and change nothing.

**Limits.** Page size: default 20, maximum ${MAX_PAGE_SIZE} (larger is rejected with 422). Request body: at most 1 MiB (413).

**Errors.** Every error is \`application/problem+json\` (RFC 9457) with \`code\`, \`trace_id\` and \`request_id\`. The catalogue:

| status | code | meaning |
|---|---|---|
${rows}

In a 422 \`VALIDATION_FAILED\`, \`errors[]\` has one entry per violated constraint; its \`code\` is one of:

| code | meaning |
|---|---|
${fieldRows}
`
}

/** The problem `type` pages, /openapi.json and the /docs reference (all assets served locally). */
export async function docsRoutes (app: FastifyInstance, { catalogue }: { catalogue: Catalogue }): Promise<void> {
  app.get('/openapi.json', {
    schema: {
      tags: ['operations'],
      summary: 'This OpenAPI 3.1 document',
      response: { 200: Type.Object({}, { additionalProperties: true, description: 'An OpenAPI 3.1 document.' }), ...problemResponses(...SYSTEM_ERRORS) },
    },
  }, async (_req, reply) => {
    reply.header('cache-control', 'public, max-age=300')
    return app.swagger()
  })

  app.get<{ Params: { slug: string } }>('/problems/:slug', {
    schema: {
      tags: ['operations'],
      summary: 'Describes one problem type of the error catalogue',
      params: Type.Object({ slug: Type.String({ pattern: '^[a-z-]+$', maxLength: 64 }) }),
      produces: ['text/html'],
      response: {
        200: Type.String({ description: 'An HTML page naming the code, its status and its meaning.' }),
        ...problemResponses(404, 422, ...SYSTEM_ERRORS),
      },
    },
  }, async (req, reply) => {
    const code = (Object.keys(catalogue.problems) as ProblemCode[]).find(c => problemSlug(c) === req.params.slug)
    if (!code) throw new AppError('NOT_FOUND', `No problem type is called ${req.params.slug}.`)
    const p = catalogue.problems[code]
    reply.header('content-type', 'text/html; charset=utf-8').header('cache-control', 'public, max-age=86400')
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(p.title)}</title></head>
<body>
<h1>${escapeHtml(p.title)}</h1>
<p>HTTP status <strong>${p.status}</strong>, code <code>${code}</code>.</p>
<p>${escapeHtml(p.detail)}</p>
<p>Every error body is <code>application/problem+json</code> with <code>type</code>, <code>title</code>, <code>status</code>, <code>detail</code>, <code>instance</code>, <code>code</code>, <code>trace_id</code> and <code>request_id</code>. See <a href="/docs">the API reference</a>.</p>
</body></html>`
  })
}
