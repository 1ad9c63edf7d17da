import { type TSchema, Type } from '@sinclair/typebox'
import type { Ajv } from 'ajv'
import type { FastifyBaseLogger, FastifyInstance, FastifySchema } from 'fastify'
import type { Registry } from 'prom-client'
import type { Clock } from '../../clock.ts'
import type { CatalogueDeclarations } from '../../catalogue.ts'
import type { Config, SettingsSection } from '../../config.ts'
import type { Viewer } from '../../domain/principal.ts'
import type { Job, JobWaker } from '../../jobs/job.ts'
import type { Lifecycle } from '../../jobs/lifecycle.ts'
import type { StoreModule } from '../../store/module.ts'
import type { ListPage, ListQuery, Repositories, Store, UnitOfWork } from '../../store/store.ts'
import type { CursorCodec } from '../toolkit/paging.ts'
import { API_VERSIONS, type ApiVersion, DEFAULT_VERSION, vendorMediaType } from '../protocol/versioning.ts'

/**
 * What every part's `services`, `jobs` and routes get: the composition root's (src/context.ts),
 * made once. Routes get it with what their version adds (`RouteContext`).
 */
export interface PartContext {
  readonly config: Config
  readonly store: Store
  /** The service's logger: a part logs through a child of it (`log.child({ component: 'tickets' })`). */
  readonly log: FastifyBaseLogger
  /** The app's Prometheus registry: a part adds its counters here. */
  readonly metrics: Registry
  /** What time-based rules read the time from (src/clock.ts): the system's, or a test's. */
  readonly clock: Clock
  readonly cursors: CursorCodec
  /** Wakes a job by name after a commit that gave it work (`jobs.wake('reminders')`). */
  readonly jobs: JobWaker
  /** What its services do at the app's close (closing, closed): work to start is a job. */
  readonly lifecycle: Lifecycle
  /** Every resource served, the registry's then the facilities' (a part may use another's declared capability, never its code). */
  readonly resources: readonly Resource[]
  /** Every event type the registered parts raise, in the registry's order. */
  readonly eventTypes: readonly string[]
  /**
   * What the parts' `services` made. While they are made, it holds those of the parts before (in
   * the registry's order); jobs and routes see them all.
   */
  readonly services: Services
}

/** What a resource's routes get for the version they are registered for. */
export interface RouteContext extends PartContext {
  readonly version: ApiVersion
  /** Compiles against every shared schema: `bodies.getSchema('CreateTicketBody')` validates a whole body. */
  readonly bodies: Ajv
  /**
   * A route's options with what every versioned route needs: the router constraint that picks
   * this version, `config.apiVersion`, the media types it produces, and whether the OpenAPI
   * document shows it (each path once: unprefixed for version 1, `/vN/…` for the others).
   */
  route<C extends object = object> (opts: { config?: C, schema: FastifySchema & Record<string, unknown> }): {
    constraints: { apiVersion: string }
    config: C & { apiVersion: ApiVersion }
    schema: FastifySchema & Record<string, unknown>
  }
}

/**
 * A part of the service, declared in its own folder and listed by `src/registry.ts`: what it adds
 * to the catalogue (`problems`, `fieldCodes`, `messages`), its settings, event types, scopes and
 * tables, the services it needs and its jobs. The composition root (src/context.ts) puts every
 * part's declarations together, in the registry's order. A resource (below) is a part with
 * routes; a facility (below) is a part the core and the other parts use, which may serve routes.
 *
 * @example
 * export const remindersFacility: Part = { name: 'reminders', settings, store, eventTypes: ['reminder.sent'], problems, jobs }
 */
export interface Part extends CatalogueDeclarations {
  /** Its name: a resource's is its collection's (the OpenAPI tag and the API index's link relation). */
  readonly name: string
  /** The types of the events its changes raise (`ticket.created`, …): the change stream and subscriptions offer them. */
  readonly eventTypes?: readonly string[]
  /** The scopes its routes require, besides `admin` (API keys may be made with them). */
  readonly scopes?: readonly string[]
  /** Its settings, read and checked with the core's into `config[settings.name]` (src/config.ts). */
  readonly settings?: SettingsSection
  /** Its tables and repository, when it brings any (the store opens every registered part's). */
  readonly store?: StoreModule | readonly StoreModule[]
  /**
   * What it needs beside its routes and jobs (a hub, a scheduler, a storage): made once by the
   * composition root (src/context.ts), before any route or job, and handed to them as `services`.
   */
  services? (ctx: PartContext): Partial<Services> | Promise<Partial<Services>>
  /**
   * The work it does outside requests (src/jobs/job.ts): each job declared once, with its poll,
   * its lease and its stop; run from the app's start to its close, woken by name (`jobs.wake`).
   */
  jobs? (ctx: PartContext): readonly Job[]
}

/**
 * A part the core and the other parts use (the event log and webhooks): its folder's `index.ts` is
 * its one face. It may serve routes, as the resources it carries: they are served, documented and
 * linked from the API index like the registry's, but the registry lists only resources.
 *
 * @example
 * export const eventsFacility: Facility = { name: 'event-log', store, jobs, resources: [webhooksResource, eventsResource] }
 */
export interface Facility extends Part {
  /** Its HTTP faces, each made as a resource is. */
  readonly resources?: readonly Resource[]
}

/**
 * A resource brings, from its own folder, everything the service needs to serve it: its schemas
 * (with `$id`, per version), its routes, registered once per version, and what every part declares.
 * The app names no resource; `src/registry.ts` lists them.
 */
export interface Resource extends Part {
  readonly description: string
  /** The collection's path, linked from the API index. */
  readonly path: string
  /** False when the path answers no GET (its items are created and read one by one): the index leaves it out. */
  readonly indexed?: boolean
  /** OpenAPI 3.1 `webhooks` entries: the requests the service sends for this resource. */
  readonly webhooks?: Readonly<Record<string, unknown>>
  /** Its `$id` schemas; made from what the registered parts declare when they depend on it (`SchemasContext`). */
  readonly schemas: readonly TSchema[] | ((ctx: SchemasContext) => readonly TSchema[])
  routes (app: FastifyInstance, ctx: RouteContext): Promise<void>
  /** Routes the same in every version (a feed), registered once, unprefixed; `/vN/…` aliases are rewritten onto them. */
  unversionedRoutes? (app: FastifyInstance, ctx: PartContext): Promise<void>
  /** The paths `unversionedRoutes` answer (`/feed.atom`; `*`: any rest), whose `/vN/…` aliases are rewritten. */
  readonly unversionedPaths?: readonly string[]
  /**
   * Public routes it serves on the reading site's listener too (the files a page shows), so that a
   * page's images come from the page's own origin (found by this capability, never by name).
   */
  siteRoutes? (app: FastifyInstance, ctx: PartContext): Promise<void>
  /** Further links of the API index, by relation (`feed_atom: '/feed.atom'`). */
  readonly links?: Readonly<Record<string, string>>
  /** A collection another resource may write out whole (found by this capability, never by name). */
  readonly exportable?: Exportable
  /** Its face towards files of other software: formats it writes its rows in, kinds of file it reads rows from. */
  readonly interop?: Interop
  /** Images it keeps that other resources may show (found by this capability, never by name). */
  readonly images?: ImageCatalogue
  /** Its rows may hold another resource's images: asked before such an image is deleted. */
  readonly imageHolder?: ImageHolder
  /** Its rows name people as their authors: asked before a user is deleted (found by this capability, never by name). */
  readonly authorship?: Authorship
  /** The people its rows may name as their authors (found by this capability, never by name). */
  readonly bylines?: Bylines
  /** Takes images other resources got elsewhere (an import's fetched images), as uploads (found by this capability). */
  readonly imageIntake?: ImageIntake
}

/** What a page needs to show an image of the service. */
export interface ImageFacts {
  readonly id: string
  /** As seen (its orientation applied). */
  readonly width: number
  readonly height: number
  readonly alt: string
  /** A blurred preview, as a data URL. */
  readonly placeholder: string
  /** The path of the image at its own width, in the format the browser's Accept prefers. */
  readonly url: string
  /** HTML's `srcset`: the path of each offered width up to the image's own, `<path> <w>w`, comma separated. */
  readonly srcset: string
}

/**
 * The images a resource keeps, as others may show them (in a post's HTML, as its cover):
 * found by this capability, so that no resource depends on another's code.
 *
 * @example
 * const images = resources.find(r => r.images !== undefined)?.images
 * const id = images?.idOf(imageUrlInMarkdown)                       // its id, or null for another site's image
 * const facts = await images?.find(uow, [id], config)                 // Map id → ImageFacts
 */
export interface ImageCatalogue {
  /** Of `ids`, those that exist, by id (their `srcset` from the deployment's settings). */
  find (store: Repositories, ids: readonly string[], config: Config): Promise<ReadonlyMap<string, ImageFacts>>
  /** The id of the image a URL of this service names (absolute or not, with or without a version prefix), else null. */
  idOf (url: string): string | null
}

/**
 * Images a resource takes in from bytes another resource got elsewhere (an import fetching a post's
 * images): each judged by its bytes, stripped of metadata and stored as an upload is.
 *
 * @example
 * const intake = resources.find(r => r.imageIntake !== undefined)?.imageIntake
 * const facts = await intake.add(store, services, bytes, { owner: 'ann', filename: 'cat.jpg', alt: '' }, config, clock)
 * // facts.url goes into the content; facts.id is a feature image
 */
export interface ImageIntake {
  /**
   * Records `bytes` as an image of `owner`; when the owner already has one of the same stored bytes
   * (SHA-256), that one is given back instead. Bytes that are no image it takes are refused by the
   * error an upload of them would get (an AppError whose message says why). `clock` stamps it.
   */
  add (store: Store, services: Services, bytes: Buffer, fields: { readonly owner: string, readonly filename: string | null, readonly alt: string }, config: Config, clock: Clock): Promise<ImageFacts>
}

/** A resource whose rows may hold images of another (a post's feature image). */
export interface ImageHolder {
  /** Whether any row holds the image `id` (then it may not be deleted). */
  holds (store: Repositories, id: string): Promise<boolean>
}

/** A resource whose rows name users as their authors (bylines). */
export interface Authorship {
  /** Whether any row names the user `userId` as an author. */
  holds (store: Repositories, userId: string): Promise<boolean>
  /** Gives `from`'s place in every row's authors to `to` (in the unit deleting `from`). */
  reassign (uow: UnitOfWork, from: Byline, to: Byline): Promise<void>
  /** The user's rows name them by their new slug (in the unit that changed it). */
  renamed (uow: UnitOfWork, user: Byline): Promise<void>
  /** How many published rows name each user among their authors, by user id (users with none are absent). */
  publishedCounts (store: Repositories, userIds?: readonly string[]): Promise<ReadonlyMap<string, number>>
}

/** A person as a row's byline names them. */
export interface Byline {
  readonly id: string
  readonly slug: string
}

/** The people a row may name as its authors. */
export interface Bylines {
  /** The users whose current slugs these are, by slug (a slug of no user is absent). */
  find (store: Repositories, slugs: readonly string[]): Promise<ReadonlyMap<string, Byline & { readonly name: string }>>
  /**
   * The user a name from another service stands for (a move from elsewhere): the one whose slug
   * the name gives, else a new profile without sign-in (`inactive`) of that name, in `uow`.
   */
  ensure (uow: UnitOfWork, name: string, now: Date): Promise<Byline>
}

/** What the registered parts declare that a resource's schemas may name (a subscription's events). */
export type SchemasContext = Pick<PartContext, 'eventTypes'>

/** A resource's schemas, given every event type the registered parts raise. */
export function schemasOf (resource: Resource, eventTypes: readonly string[]): readonly TSchema[] {
  return typeof resource.schemas === 'function' ? resource.schemas({ eventTypes }) : resource.schemas
}

/**
 * The services the parts make, by name: each adds its own by declaration merging
 * (`interface Services { readonly eventStreams: StreamHub }`), as a store module adds its repository.
 */
export interface Services {}

/**
 * Rows another resource writes out whole, one per line: read in id order by keyset pages (as an admin reads
 * them), each as the API version that asked for the rows represents it.
 */
export interface Exportable {
  list (store: Repositories, query: ListQuery<'id', { status?: string }>, viewer: Viewer): Promise<ListPage<{ id: number }>>
  render (row: { id: number }, version: ApiVersion, linkBase: string): unknown
}

/**
 * A resource's face towards the files of other software (found by this capability, never by name):
 * it writes its rows in file formats made elsewhere, and reads such files into rows of its own.
 * The operations that run it (a job writing a file, a job reading one) name a format or a kind of
 * file only by its name; what a row or an entry holds stays the resource's, opaque to them
 * (`unknown` here: given back to the resource as it came).
 *
 * @example
 * const interop = resources.find(r => r.interop !== undefined)?.interop
 * const writer = interop.writers.wxr                      // head(site, now), row(row, site) per row, tail()
 * const kind = interop.sniff(firstBytes, 'xml', false)    // { source: 'wordpress' }, a refusal, or null
 * for await (const e of interop.readers[kind.source].read(file, { images: false, signal })) …
 */
export interface Interop {
  /** The formats it writes its rows in, by name: what a file-writing job's `format` names. */
  readonly writers: Readonly<Record<string, FormatWriter>>
  /** The kinds of file it reads, by name: what `sniff` answers and a file-reading job records. */
  readonly readers: Readonly<Record<string, FormatReader>>
  /** How many of a file's first bytes `sniff` needs at most to decide. */
  readonly sniffBytes: number
  /** Which kind of file the first bytes show (`declared`: how the request's Content-Type names it; `final`: they are all the bytes there are). */
  sniff (head: Buffer, declared: 'xml' | 'json', final: boolean): Sniffed
  /** Maps each entry a reader found into the resource's terms: on the event loop, or on a thread of its own. */
  mapper (opts: { readonly thread: boolean }): EntryMapper
  /** The images an entry shows, for a job that fetches them in. */
  readonly images: EntryImages
  /**
   * Writes mapped items in the caller's unit of work, by the resource's own rules (its slugs,
   * revisions and events); `existing`: the row an earlier run made of the same source entry.
   * `clock`: the service's; `images`: the service's images, which an item may show (absent: none
   * are kept); `bylines`: the people an item may name as its authors.
   */
  write (uow: UnitOfWork, items: readonly { readonly existing: number | null, readonly item: unknown }[], editor: string, config: Config, clock: Clock, images?: ImageCatalogue, bylines?: Bylines): Promise<WrittenOutcome[]>
}

/** A file format a resource writes its rows in, as a stream: `head`, a `row` per row, `tail`. */
export interface FormatWriter {
  readonly contentType: string
  /** The file name's extension, without its dot. */
  readonly extension: string
  /** `site`: the public base URL the file names its rows by. */
  head (site: string, now: Date): string
  /** A row as the resource's `exportable.list` gave it. */
  row (row: { id: number }, site: string): string
  tail (): string
}

/** What the first bytes of a file tell: the kind of file it is, a refusal (415: not a kind read here; 422: one that cannot be read), or not yet. */
export type Sniffed =
  | { readonly source: string }
  | { readonly refuse: 415 | 422, readonly reason: string }
  | null

/** A stored file as a reader reads it. */
export interface SourceFile {
  /**
   * The file's text from its start, a new reading at each call. `noted`: bytes that are not UTF-8
   * are told in warnings (a reader reading the file twice notes its first reading only);
   * `counted`: its bytes count towards the run's progress.
   */
  open (opts: { readonly noted: boolean, readonly counted: boolean }): AsyncIterable<string>
}

/** Reads one kind of file, as a stream, into entries in the file's order. */
export interface FormatReader {
  /** How many counted readings of the whole file a run makes (for its progress). */
  readonly passes: number
  /**
   * `images`: the run fetches the entries' images (a reader may then gather what entries refer to
   * first, in a reading aside); `signal`: the run's, aborted once it lost its lease.
   */
  read (file: SourceFile, opts: { readonly images: boolean, readonly signal: AbortSignal }): AsyncIterable<SourceEntry>
}

/** What a reader finds in a file: an entry to map and write, things it does not take (counted by kind), and warnings. */
export type SourceEntry =
  | { readonly kind: 'item', readonly key: string, readonly label: string, readonly source: unknown }
  | { readonly kind: 'other', readonly what: string, readonly count: number }
  | { readonly kind: 'warning', readonly item: string, readonly message: string }

/** The file cannot be read at all: a job reading it fails with this reason, and is not tried again. */
export class UnreadableFile extends Error {
  constructor (reason: string) {
    super(reason)
    this.name = 'UnreadableFile'
  }
}

/** What the mapping of an entry knows besides the entry. */
export interface MappingContext {
  /** The kind of file it came from (a reader's name). */
  readonly source: string
  readonly now: Date
  /** Who an entry without an author is written by: the admin running the job. */
  readonly owner: string
}

/** An entry mapped, with what the rules changed on the way, and its tags (counted, case-insensitively); or why it cannot be written. */
export type MappedEntry =
  | { readonly item: unknown, readonly tags: readonly string[], readonly warnings: readonly string[] }
  | { readonly skipped: string, readonly warnings: readonly string[] }

/** Maps entries, answering in the order they were asked. */
export interface EntryMapper {
  map (source: unknown, ctx: MappingContext): Promise<MappedEntry>
  close (): Promise<void>
}

/** The images an entry (as a reader gave it) shows. */
export interface EntryImages {
  /** The image sources it shows, as written, each once, its cover image's first; and which is its cover (null: none). */
  sources (source: unknown): { readonly urls: readonly string[], readonly cover: string | null }
  /** The entry with each source that `urls` maps pointing where it says, and `cover` (an image of the service's id) as its cover when given. */
  withImages (source: unknown, urls: ReadonlyMap<string, string>, cover: string | undefined): unknown
}

/** What became of one item: written (and how), or left out with a reason a report shows. */
export type WrittenOutcome =
  | { readonly outcome: 'created' | 'updated' | 'unchanged', readonly id: number, readonly redirects: number }
  | { readonly outcome: 'skipped', readonly reason: string }

export interface ResourcesOptions {
  readonly bodies: Ajv
  /** Versioned routes that are not a resource (the API index), registered alongside. */
  readonly alongside?: readonly ((app: FastifyInstance, ctx: RouteContext) => Promise<void>)[]
}

const NO_QUERY = Type.Object({}, { additionalProperties: false })

/** Registers every resource once per API version, unprefixed (negotiated by Accept) and under `/vN`. */
export async function registerResources (app: FastifyInstance, parts: PartContext, opts: ResourcesOptions): Promise<void> {
  const { config, store, log, metrics, clock, cursors, jobs, lifecycle, resources, eventTypes, services } = parts
  // Only what a part's context holds, whatever else `parts` carries (the app's whole context).
  const shared: PartContext = { config, store, log, metrics, clock, cursors, jobs, lifecycle, resources, eventTypes, services }
  for (const resource of parts.resources) await resource.unversionedRoutes?.(app, shared)
  for (const version of API_VERSIONS) {
    for (const prefix of ['', `/v${version}`]) {
      const documented = prefix === '' ? version === DEFAULT_VERSION : version !== DEFAULT_VERSION
      const produces = ['application/json', vendorMediaType(version)]
      const ctx: RouteContext = {
        ...shared,
        version,
        bodies: opts.bodies,
        route: ({ config, schema }) => ({
          constraints: { apiVersion: String(version) },
          config: { ...(config ?? {}), apiVersion: version } as never,
          // A route without query parameters refuses any (a typo must not pass unnoticed).
          schema: { hide: !documented, produces, querystring: NO_QUERY, ...schema },
        }),
      }
      await app.register(async scope => {
        for (const extra of opts.alongside ?? []) await extra(scope, ctx)
        for (const resource of parts.resources) await resource.routes(scope, ctx)
      }, { prefix })
    }
  }
}
