import compress from '@fastify/compress'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, LogController } from 'fastify'
import type { AppContext } from './context.ts'
import { authorizationPlugin, authPlugin } from './http/pipeline/auth.ts'
import { cachingPlugin } from './http/pipeline/caching.ts'
import { publicCachePlugin } from './http/pipeline/public-cache.ts'
import { contentTypePlugin } from './http/pipeline/content-type.ts'
import { lingeringClosePlugin } from './http/pipeline/lingering-close.ts'
import { metricsPlugin } from './http/pipeline/metrics.ts'
import { nodeRequestsPlugin } from './http/pipeline/node-requests.ts'
import { clientErrorHandler, serverOptions } from './http/pipeline/client-errors.ts'
import { deadlinesPlugin } from './http/pipeline/deadlines.ts'
import { isNotModified } from './http/toolkit/conditional.ts'
import { JsonPatchSchema, MergePatchSchema } from './http/toolkit/patch.ts'
import { problemsPlugin, sendProblem, toAppError } from './http/protocol/problems.ts'
import { rateLimitPlugin } from './http/pipeline/rate-limit.ts'
import { requestLogPlugin } from './http/pipeline/request-log.ts'
import { routePlugin } from './http/protocol/route.ts'
import { routingPlugin } from './http/pipeline/routing.ts'
import { securityPlugin } from './http/pipeline/security.ts'
import { documentIdempotencyKey, idempotencyPlugin } from './http/pipeline/idempotency.ts'
import { registerResources, schemasOf } from './http/contract/resources.ts'
import { requestTargetPlugin } from './http/pipeline/request-target.ts'
import { sheddingPlugin } from './http/pipeline/shedding.ts'
import { storeCircuitPlugin } from './http/pipeline/store-circuit.ts'
import { lazySerializers } from './http/protocol/serialization.ts'
import { genRequestId, startTrace, tracingPlugin } from './http/pipeline/tracing.ts'
import { createValidatorCompiler } from './http/protocol/validation.ts'
import { apiVersionConstraint, unversionedAliases, versioningPlugin } from './http/protocol/versioning.ts'
import { documentCrossCutting, documentRoute, fieldErrorSchema, LinkSchema, problemSchema } from './http/contract/schemas.ts'
import { adminRoutes } from './routes/admin/admin-routes.ts'
import { DOCS_THEME_CSS, DOCS_THEME_JS, MARK_SVG, SERVICE_NAME } from './routes/system/brand.ts'
import { apiDescription, docsRoutes } from './routes/system/docs-routes.ts'
import { healthRoutes } from './routes/system/health-routes.ts'
import { IndexSchema, indexRoutes, VersionsSchema } from './routes/system/index-routes.ts'

/**
 * Registers the whole service made by the context (src/context.ts), whose store is open and
 * migrated: every service comes from there, handed to the plugins and routes that use it, never
 * through a decoration. Never listens: the server (or a test) does. Plugins are registered in the
 * order requests meet them.
 */
export async function buildApp (context: AppContext): Promise<FastifyInstance> {
  const { config, store, resources, catalogue } = context
  const SHARED_SCHEMAS = [JsonPatchSchema, MergePatchSchema, LinkSchema, fieldErrorSchema(catalogue), problemSchema(catalogue), IndexSchema, VersionsSchema, ...resources.flatMap(r => schemasOf(r, context.eventTypes))]
  const app = Fastify({
    loggerInstance: context.log,
    genReqId: genRequestId,
    requestIdHeader: false,
    // Fastify's own request lines are replaced by one line per request (src/http/pipeline/request-log.ts).
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    exposeHeadRoutes: true,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 200, constraints: { apiVersion: apiVersionConstraint } },
    frameworkErrors: (err, req, reply) => {
      startTrace(req, reply)
      sendProblem(catalogue, req, reply, toAppError(err))
    },
    clientErrorHandler,
    // Bounds on reading a request (headers, then the whole request); src/http/pipeline/client-errors.ts answers them.
    http: serverOptions(config),
    requestTimeout: config.requestTimeoutMs,
    rewriteUrl: unversionedAliases(resources.flatMap(r => r.unversionedPaths ?? [])),
    schemaController: { compilersFactory: { buildSerializer: lazySerializers() } },
  }).withTypeProvider<TypeBoxTypeProvider>()

  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
  app.decorate('representations', context.representations)
  const validator = createValidatorCompiler(SHARED_SCHEMAS)
  app.setValidatorCompiler(validator)

  await app.register(routePlugin)
  await app.register(tracingPlugin)
  await app.register(problemsPlugin, { catalogue })
  await app.register(securityPlugin, { config })
  await app.register(requestTargetPlugin)
  await app.register(sheddingPlugin, { config })
  await app.register(storeCircuitPlugin, { store, metrics: context.metrics })
  await app.register(nodeRequestsPlugin)
  await app.register(lingeringClosePlugin)
  await app.register(deadlinesPlugin, { inFlight: context.inFlight })
  await app.register(routingPlugin, { catalogue, config })
  await app.register(versioningPlugin, { config, clock: context.clock })
  await app.register(contentTypePlugin)
  await app.register(authPlugin, { authenticator: context.authenticator })
  await app.register(rateLimitPlugin, { config })
  await app.register(authorizationPlugin)
  await app.register(cachingPlugin)
  if (context.publicCache !== null) await app.register(publicCachePlugin, { cache: context.publicCache, isNotModified, metrics: context.metrics })
  await app.register(idempotencyPlugin, { config, store, clock: context.clock })
  // Before any plugin that adds routes (metrics), so that every route is in the document.
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: SERVICE_NAME, version: '1.0.0', description: apiDescription(resources, catalogue) },
      tags: [
        ...resources.map(r => ({ name: r.name, description: r.description })),
        { name: 'index', description: 'Entry points' },
        { name: 'operations', description: 'Health, metrics and documentation' },
      ],
      webhooks: Object.assign({}, ...resources.map(r => r.webhooks ?? {})),
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A JWT or an API key (`blog_…`).' } } },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }) => {
      const documented = documentRoute({ schema, url, route })
      return { schema: documentIdempotencyKey(route.method, documented.schema as Record<string, unknown>) as never, url }
    },
    transformObject: documentCrossCutting as never,
  })
  await app.register(metricsPlugin, { registry: context.metrics })
  await app.register(requestLogPlugin)
  await app.register(compress, { global: true, threshold: 1024, encodings: ['br', 'gzip'] })

  await registerResources(app, context, { alongside: [indexRoutes(resources)], bodies: validator.body })
  runJobs(app, context)
  await app.register(healthRoutes, { store })
  await app.register(docsRoutes, { catalogue })
  await app.register(adminRoutes)
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // BaseLayout: the reference without Swagger UI's top bar (its logo and its box for another document's URL).
    uiConfig: { deepLinking: true, validatorUrl: null, layout: 'BaseLayout' } as never,
    theme: {
      title: `${SERVICE_NAME} · API reference`,
      css: [{ filename: 'service.css', content: DOCS_THEME_CSS }],
      js: [{ filename: 'service.js', content: DOCS_THEME_JS }],
      favicon: [{ filename: 'mark.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: Buffer.from(MARK_SVG) }],
    },
  })

  return app
}

/**
 * The parts' jobs, run from the app's start to its close (the deployment's unless BACKGROUND_WORK
 * is off; the instance's own always), and what their services do at the close.
 */
function runJobs (app: FastifyInstance, { jobs, lifecycle }: AppContext): void {
  // Before the server stops accepting: open streams would otherwise hold the close until its grace runs out.
  app.addHook('preClose', async () => { for (const fn of lifecycle.closing) await fn() })
  app.addHook('onReady', async () => {
    if (!jobs.enabled) app.log.info('background work is off on this instance (BACKGROUND_WORK=false): another instance of the deployment must run it')
    await jobs.start()
  })
  app.addHook('onClose', async () => { await jobs.stop() })
  // After the jobs, which may still use what these close (a blob storage).
  app.addHook('onClose', async () => { for (const fn of lifecycle.closed) await fn() })
}
