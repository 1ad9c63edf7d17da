import type { Clock } from '../../../clock.ts'
import type { Config } from '../../../config.ts'
import type { Principal } from '../../../domain/principal.ts'
import { AppError, type FieldError } from '../../../errors.ts'
import type { Byline, Bylines, ImageCatalogue, Interop, WrittenOutcome } from '../../../http/contract/resources.ts'
import { wordMessage } from '../../../messages.ts'
import type { UnitOfWork } from '../../../store/store.ts'
import { contentImages } from '../content-images.ts'
import { postEvents } from '../events.ts'
import type { Post, PostInput, PostStatus } from '../post.ts'
import { PostService } from '../post-service.ts'
import { postsFieldCodes } from '../problems.ts'
import { deriveSlug, isSlug } from '../../../domain/slug.ts'
import { isSiteWord } from '../site-words.ts'
import { normaliseTags } from '../tags.ts'

/**
 * An entry read from another service's file, in this service's terms: what a client would send to
 * create it, plus what only a move from elsewhere brings (its dates, author, old addresses).
 */
export interface ImportableItem {
  /** The row an earlier run made of the same source entry (its source identity), if any. */
  readonly existing: number | null
  readonly title: string
  /** Markdown. */
  readonly content: string
  readonly status: PostStatus
  /** With status `scheduled`: when it is to be published (ISO 8601 UTC). */
  readonly publishAt: string | null
  /** When the source published it (ISO 8601 UTC), for a published entry. */
  readonly publishedAt: string | null
  readonly author: string
  readonly tags: readonly string[]
  /** Null: derived from the content. */
  readonly excerpt: string | null
  /** The slug to keep when free (else it gets `-2`, `-3` …); null: derived from the title. */
  readonly slug: string | null
  /** Old slugs that should lead to the entry (claimed when free). */
  readonly aliases: readonly string[]
  /** The id of its feature image (an image of the service); absent: the entry's stays as it is. */
  readonly featureImage?: string | null
}

function inputOf (item: ImportableItem): PostInput {
  return {
    title: item.title,
    content: item.content,
    status: item.status,
    tags: normaliseTags(item.tags),
    excerpt: item.excerpt,
    publishAt: item.status === 'scheduled' ? item.publishAt : null,
    ...(item.featureImage === undefined ? {} : { featureImage: item.featureImage }),
  }
}

/** Whether writing `input` over `post` would change nothing a reader sees. */
function unchanged (post: Post, input: PostInput): boolean {
  const publishAt = input.publishAt ?? null
  return post.title === input.title && post.content === input.content && post.status === input.status &&
    JSON.stringify(post.tags) === JSON.stringify(input.tags) &&
    (input.excerpt === null ? post.excerptDerived : post.excerpt === input.excerpt) &&
    (post.publishAt === null || publishAt === null ? post.publishAt === publishAt : Date.parse(post.publishAt) === Date.parse(publishAt)) &&
    (input.featureImage === undefined || (post.featureImage?.id ?? null) === input.featureImage)
}

/** An entry of a 422 in English: its message, or its code's text (the core's or posts'). */
function wordOf (e: FieldError): string {
  if (e.message === undefined) return (postsFieldCodes as Readonly<Record<string, string>>)[e.code] ?? e.code
  return typeof e.message === 'string' ? e.message : wordMessage(e.message, 'en')
}

/** Why the rules of posts refused an item, in words for the report. */
function reasonOf (err: AppError): string {
  const details = (err.errors ?? []).map(e => `${e.field}: ${wordOf(e)}`)
  return details.length > 0 ? details.join('; ') : err.message
}

/** The old slugs a written post claims: those that are slugs, not its own and not the site's words. */
function aliasClaims (post: Post, aliases: readonly string[]): { postId: number, slug: string }[] {
  return [...new Set(aliases)].filter(a => a !== post.slug && isSlug(a) && !isSiteWord(a)).map(slug => ({ postId: post.id, slug }))
}

type Written = { readonly outcome: 'created' | 'updated' | 'unchanged', readonly post: Post }

async function writeOne (uow: UnitOfWork, service: PostService, item: ImportableItem, admin: Principal, author: (name: string) => Promise<Byline[]>): Promise<Written> {
  const input = inputOf(item)
  const current = item.existing === null ? null : await uow.posts.findById(item.existing, admin)
  if (current !== null) {
    if (unchanged(current, input)) return { outcome: 'unchanged', post: current }
    // The slug it has here stays: readers' links to it keep working.
    return { outcome: 'updated', post: await service.update(current.id, admin, () => input) }
  }
  // The slug is kept when free, else it gets -2, -3 … as a derived one does; one that breaks the
  // rules of slugs (too long, other characters) is made into one as a title is.
  const base = item.slug !== null && isSlug(item.slug) ? item.slug : deriveSlug(item.slug ?? item.title)
  const source: Principal = { subject: item.author, scopes: new Set(), kind: 'jwt' }
  // The source's author is a user here: the one of that name's slug, else a profile without sign-in.
  const authors = await author(item.author)
  const post = await service.create(input, source, w => ({
    ...w,
    authors,
    slug: { derived: base },
    // When the source published it (an archived post may have been), not when it arrived here.
    publishedAt: (item.status === 'published' || item.status === 'archived') && item.publishedAt !== null ? item.publishedAt : w.publishedAt,
  }))
  return { outcome: 'created', post }
}

/**
 * Posts written from another service's export, each by the rules of posts (its slug claim, tags,
 * revision and events) in the caller's unit of work. An item those rules refuse (a schedule in the
 * past, a rule the mapping missed) is skipped with the reason; it is refused before any statement
 * runs, so the batch's transaction stays usable.
 */
export const writeImported: Interop['write'] = async (uow: UnitOfWork, mapped, editor: string, config: Config, clock: Clock, catalogue?: ImageCatalogue, bylines?: Bylines): Promise<WrittenOutcome[]> => {
  // Each item as the mapping (mapping.ts) made it, with the row an earlier run made of its entry.
  const items: ImportableItem[] = mapped.map(m => ({ ...(m.item as Omit<ImportableItem, 'existing'>), existing: m.existing }))
  const author = async (name: string): Promise<Byline[]> => bylines === undefined ? [] : [await bylines.ensure(uow, name, clock.now())]
  const images = catalogue === undefined ? undefined : contentImages(catalogue, config)
  const service = new PostService(uow, {
    revisionsKeep: config.editorial.revisionsKeep,
    clock,
    changed: postEvents(uow.events),
    // Its images of this service render with their variants, as a post written through the API does.
    ...(images === undefined ? {} : { images: async (content: string) => await images(uow, content) }),
    ...(catalogue === undefined ? {} : { featureImage: async (id: string) => (await catalogue.find(uow, [id], config)).get(id) ?? null }),
  })
  const admin: Principal = { subject: editor, scopes: new Set(['admin']), kind: 'jwt' }
  const written: (Written | { outcome: 'skipped', reason: string })[] = []
  for (const item of items) {
    try {
      written.push(await writeOne(uow, service, item, admin, author))
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED') throw err
      written.push({ outcome: 'skipped', reason: reasonOf(err) })
    }
  }
  // The batch's old slugs in one statement, once its posts hold their own slugs (a post's own slug
  // comes before another's old one).
  const claimed = await uow.postAliases.claimMany(written.flatMap((w, i) => w.outcome === 'skipped' ? [] : aliasClaims(w.post, items[i]!.aliases)))
  return written.map(w => w.outcome === 'skipped' ? w : { outcome: w.outcome, id: w.post.id, redirects: claimed.get(w.post.id) ?? 0 })
}
