import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.ts'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import type { ImageCatalogue, ImageFacts, PartContext, Resource, RouteContext, Services } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import { MERGE_PATCH } from '../../http/pipeline/content-type.ts'
import { preconditionOf, sendResource } from '../../http/toolkit/conditional.ts'
import { applyMergePatch, type Json } from '../../http/toolkit/patch.ts'
import { answerWrite, writtenResource } from '../../http/toolkit/write.ts'
import type { Repositories, Store } from '../../store/store.ts'
import { type SettingsRow, siteSettingsStore, type StoredSettings } from './store.ts'

/** The defaults of every setting an admin has not set. */
export const SETTINGS_DEFAULTS = {
  title: 'Blog',
  description: '',
  language: 'en',
  accent_color: '#1a56db',
  navigation: [] as readonly { readonly label: string, readonly url: string }[],
  posts_per_page: 10,
} as const

const IMAGE_FIELDS = ['logo', 'icon', 'cover_image'] as const
const KIND = 'site-settings'

/** The settings with their defaults, their images' facts, and the site's URL: what GET /site shows and pages use. */
export interface SiteSettings {
  readonly title: string
  readonly description: string
  readonly language: string
  readonly logo: ImageFacts | null
  readonly icon: ImageFacts | null
  readonly cover_image: ImageFacts | null
  readonly accent_color: string
  readonly navigation: readonly { readonly label: string, readonly url: string }[]
  readonly posts_per_page: number
  /** SITE_BASE_URL; null with the site off. */
  readonly url: string | null
}

/** The settings and the revision they are at (which changes with every write). */
export interface SiteSettingsRead {
  readonly settings: SiteSettings
  readonly revision: number
  readonly updatedAt: string
}

/** Reads the site's settings: the public face of this resource for other faces (the reading site). */
export interface SiteSettingsReader {
  read (): Promise<SiteSettingsRead>
}

declare module '../../http/contract/resources.ts' { interface Services { readonly siteSettings: SiteSettingsReader } }

const ImageSchema = Type.Union([Type.Object({
  id: Type.String({ maxLength: 100 }),
  url: Type.String({ maxLength: 200 }),
  width: Type.Integer({ minimum: 1 }),
  height: Type.Integer({ minimum: 1 }),
  alt: Type.String({ maxLength: 500 }),
  placeholder: Type.String({ maxLength: 2000 }),
  srcset: Type.String({ maxLength: 4000 }),
}, { additionalProperties: false }), Type.Null()])
const Title = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: '1–200 characters, not all white space.' })
const Description = Type.String({ maxLength: 500 })
const Language = Type.String({ maxLength: 35, pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$', 'x-error-code': 'INVALID_FORMAT', description: 'A BCP 47 language tag (`en`, `de-CH`).' })
const Accent = Type.String({ maxLength: 7, pattern: '^#[0-9a-fA-F]{6}$', 'x-error-code': 'INVALID_FORMAT', description: '`#rrggbb`.' })
const NavLink = Type.Object({
  label: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
  url: Type.String({ minLength: 1, maxLength: 2000, pattern: '^(/|[Hh][Tt][Tt][Pp][Ss]?://)[^\\s]*$', 'x-error-code': 'INVALID_FORMAT', description: 'A path on the site (`/about`) or an http/https URL.' }),
}, { additionalProperties: false })
const Navigation = Type.Array(NavLink, { maxItems: 20 })
const PerPage = Type.Integer({ minimum: 1, maximum: 50 })
const MediaRef = Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()], { description: 'A media id (an image), or null.' })

export const SiteSettingsSchema = Type.Object({
  title: Title,
  description: Description,
  language: Language,
  logo: ImageSchema,
  icon: ImageSchema,
  cover_image: ImageSchema,
  accent_color: Accent,
  navigation: Navigation,
  posts_per_page: PerPage,
  url: Type.Union([Type.String({ maxLength: 2000 }), Type.Null()], { description: 'SITE_BASE_URL, or null when the site is off.' }),
}, { $id: 'SiteSettings', additionalProperties: false })

/** Every member may be null: the setting falls back to its default (an image: none). */
export const PatchSiteSettingsBodySchema = Type.Object({
  title: Type.Optional(Type.Union([Title, Type.Null()])),
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  language: Type.Optional(Type.Union([Language, Type.Null()])),
  logo: Type.Optional(MediaRef),
  icon: Type.Optional(MediaRef),
  cover_image: Type.Optional(MediaRef),
  accent_color: Type.Optional(Type.Union([Accent, Type.Null()])),
  navigation: Type.Optional(Type.Union([Navigation, Type.Null()])),
  posts_per_page: Type.Optional(Type.Union([PerPage, Type.Null()])),
}, { $id: 'PatchSiteSettingsBody', additionalProperties: false })
type PatchSiteSettingsBody = Static<typeof PatchSiteSettingsBodySchema>

const EVENT_TYPES = ['site.updated'] as const

function imagesOf (ctx: Pick<PartContext, 'resources'>): ImageCatalogue | undefined {
  return ctx.resources.find(r => r.images !== undefined)?.images
}

/** The stored settings as everyone sees them: defaults filled in, images as their facts. */
async function resolve (repos: Repositories, images: ImageCatalogue | undefined, config: Config, row: SettingsRow): Promise<SiteSettingsRead> {
  const s = row.settings
  const ids = IMAGE_FIELDS.flatMap(f => s[f] === undefined ? [] : [s[f]])
  const facts = images === undefined || ids.length === 0 ? new Map<string, ImageFacts>() : await images.find(repos, ids, config)
  const image = (f: typeof IMAGE_FIELDS[number]) => s[f] === undefined ? null : facts.get(s[f]) ?? null
  return {
    settings: {
      title: s.title ?? SETTINGS_DEFAULTS.title,
      description: s.description ?? SETTINGS_DEFAULTS.description,
      language: s.language ?? SETTINGS_DEFAULTS.language,
      logo: image('logo'),
      icon: image('icon'),
      cover_image: image('cover_image'),
      accent_color: (s.accent_color ?? SETTINGS_DEFAULTS.accent_color).toLowerCase(),
      navigation: s.navigation ?? SETTINGS_DEFAULTS.navigation,
      posts_per_page: s.posts_per_page ?? SETTINGS_DEFAULTS.posts_per_page,
      url: config.site.baseUrl,
    },
    revision: row.revision,
    updatedAt: row.updatedAt,
  }
}

/** The event's and the answer's body: the representation. */
function represent (r: SiteSettingsRead): Record<string, unknown> {
  return { ...r.settings }
}

/** The merge patch over what is stored; image ids checked against the images the service keeps. */
async function patched (repos: Repositories, images: ImageCatalogue | undefined, config: Config, before: StoredSettings, body: PatchSiteSettingsBody): Promise<StoredSettings> {
  const ids = IMAGE_FIELDS.flatMap(f => typeof body[f] === 'string' ? [body[f]] : [])
  if (ids.length > 0) {
    const found = images === undefined ? new Map<string, ImageFacts>() : await images.find(repos, ids, config)
    const missing = IMAGE_FIELDS.filter(f => typeof body[f] === 'string' && !found.has(body[f]))
    if (missing.length > 0) throw validationFailed(missing.map(f => fieldError(f, 'INVALID_VALUE', 'No image with this id exists.')))
  }
  return applyMergePatch(before as Json, body as Json) as StoredSettings
}

async function siteRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const images = imagesOf(ctx)
  const tags = ['site']
  const ref = Type.Ref(SiteSettingsSchema)
  const send = (req: FastifyRequest, r: SiteSettingsRead) => ({ id: 'site', revision: r.revision, updatedAt: r.updatedAt })

  app.get('/site', ctx.route({
    schema: { tags, summary: 'The site\'s settings', description: 'Public. The reading site\'s title, description, language, images, accent colour, navigation and paging, with its URL.', response: { 200: ref, 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS) } },
  }), async (req, reply) => {
    const r = await ctx.services.siteSettings.read()
    return sendResource(req, reply, KIND, send(req, r), represent(r), 'public')
  })

  app.patch<{ Body: PatchSiteSettingsBody }>('/site', ctx.route({
    config: { requiredScope: 'admin', bodyTypes: [MERGE_PATCH], acceptPatch: [MERGE_PATCH] },
    schema: {
      tags,
      summary: 'Change the site\'s settings',
      description: '`admin`. `application/merge-patch+json`; a member set to null takes its default again (an image: none). `logo`, `icon` and `cover_image` are media ids. Raises `site.updated`.',
      body: Type.Ref(PatchSiteSettingsBodySchema),
      response: { 200: ref, ...problemResponses(...COMMON_ERRORS, 403, 409, 412, 413, 415, 422) },
    },
  }), async (req, reply) => await answerWrite(ctx.store, req, reply, async uow => {
    const before = await uow.siteSettings.read()
    const holds = preconditionOf(req, KIND)
    if (holds !== undefined && !holds(before)) throw new AppError('PRECONDITION_FAILED')
    const settings = await patched(uow, images, ctx.config, before.settings, req.body)
    const after = await uow.siteSettings.write(settings, before.revision, ctx.clock.now())
    if (after === null) throw new AppError('PRECONDITION_FAILED', 'The settings changed meanwhile; read them again.')
    const r = await resolve(uow, images, ctx.config, after)
    uow.events.record({ type: 'site.updated', data: represent(r), owner: null, public: true })
    return writtenResource(req, KIND, send(req, r), represent(r), 200)
  }))
}

function siteServices (ctx: PartContext): Partial<Services> {
  const store: Store = ctx.store
  return { siteSettings: { read: async () => await resolve(store, imagesOf(ctx), ctx.config, await store.siteSettings.read()) } }
}

/** The reading site's settings: one document, public to read, the admin's to change. */
export const siteSettingsResource: Resource = {
  name: KIND,
  description: 'The reading site\'s settings: title, description, language, images, accent colour, navigation, paging',
  path: '/site',
  schemas: [SiteSettingsSchema, PatchSiteSettingsBodySchema],
  eventTypes: EVENT_TYPES,
  store: siteSettingsStore,
  services: siteServices,
  routes: siteRoutes,
}
