import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Resource, RouteContext } from '../../http/contract/resources.ts'
import { linkBase, versionsOf } from '../../http/protocol/versioning.ts'
import { COMMON_ERRORS, LinkSchema, problemResponses } from '../../http/contract/schemas.ts'

export const IndexSchema = Type.Object({
  _links: Type.Record(Type.String(), Type.Ref(LinkSchema)),
}, { $id: 'Index', additionalProperties: false })

export const VersionsSchema = Type.Object({
  versions: Type.Array(Type.Object({
    version: Type.Integer({ minimum: 1, maximum: 99 }),
    introduced: Type.String({ format: 'date-time', maxLength: 30 }),
    deprecated: Type.Union([Type.String({ format: 'date-time', maxLength: 30 }), Type.Null()]),
    sunset: Type.Union([Type.String({ format: 'date-time', maxLength: 30 }), Type.Null()]),
  }, { additionalProperties: false }), { maxItems: 99 }),
}, { $id: 'Versions', additionalProperties: false })

/** GET / (the API index, linking every resource's collection) and GET /versions, answered under every version prefix. */
export function indexRoutes (resources: readonly Resource[]) {
  return async function index (app: FastifyInstance, ctx: RouteContext): Promise<void> {
    const config = { describesVersions: true }
    app.get('/', {
      // Under /v1 the index is /v1 alone; /v1/ redirects to it like every trailing slash.
      prefixTrailingSlash: 'no-slash',
      ...ctx.route({
        config,
        schema: {
          tags: ['index'],
          summary: 'API index',
          description: 'Links to every collection, the OpenAPI document and the API reference.',
          response: { 200: Type.Ref(IndexSchema), ...problemResponses(...COMMON_ERRORS, 422) },
        },
      }),
    }, async (req, reply) => {
      const base = linkBase(req)
      reply.header('cache-control', 'public, max-age=300').header('content-type', req.responseMediaType)
      return {
        _links: {
          self: { href: base === '' ? '/' : base },
          ...Object.fromEntries(resources.filter(r => r.indexed !== false).map(r => [r.name, { href: `${base}${r.path}` }])),
          ...Object.fromEntries(resources.flatMap(r => Object.entries(r.links ?? {})).map(([rel, path]) => [rel, { href: `${base}${path}` }])),
          versions: { href: `${base}/versions` },
          openapi: { href: '/openapi.json' },
          docs: { href: '/docs' },
        },
      }
    })

    app.get('/versions', ctx.route({
      config,
      schema: {
        tags: ['index'],
        summary: 'API versions and their lifecycle',
        response: { 200: Type.Ref(VersionsSchema), ...problemResponses(...COMMON_ERRORS, 422) },
      },
    }), async (req, reply) => {
      reply.header('cache-control', 'public, max-age=300').header('content-type', req.responseMediaType)
      return { versions: versionsOf(ctx.config) }
    })
  }
}
