import type { Clock } from '../../clock.ts'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import type { Byline, ImageFacts } from '../../http/contract/resources.ts'
import { writeCurrent } from '../../http/toolkit/action.ts'
import type { ContentImages } from './markdown.ts'
import { publishedAtAfter } from './published-at.ts'
import { newPostWrite, postWrite } from './post-write.ts'
import { SlugTakenError } from './posts-repository.ts'
import type { ListPage, ListQuery } from '../../store/store.ts'
import type { DuePost, PostFilter, PostStore, RevisionStore, TagCount, TagsQuery } from './store.ts'
import type { NewPostWrite, Post, PostInput, PostSortKey, PostSummary, PostWrite } from './post.ts'
import { isAdmin, may, type Principal, type Viewer } from '../../domain/principal.ts'
import { ROLE_ACTIONS } from '../../domain/roles.ts'
import { type Revision, type RevisionSummary, SYSTEM_EDITOR } from './revisions/revision.ts'
import { applySchedule, SCHEDULE_CHANNEL } from './schedule.ts'

/** A client's condition on the current post (If-Match, If-Unmodified-Since); true to go ahead. */
export type Precondition = (current: Post) => boolean

/** Told of each change a write made, in its unit of work: the post before (null: created) and after (null: deleted). */
export type PostChanged = (before: Post | null, after: Post | null) => void

/** What the service works on: a unit of work's repositories for writes, the store's for reads. */
export interface PostRepositories {
  readonly posts: PostStore
  readonly revisions: RevisionStore
  /** A unit of work's signal to every instance (see UnitOfWork); absent on the store's repositories. */
  readonly signal?: (channel: string) => Promise<void>
}

export interface PostServiceOptions {
  /** REVISIONS_KEEP: how many of a post's newest revisions are kept. */
  readonly revisionsKeep: number
  /** What the schedule's rules read the time from (the composition root's, src/context.ts). */
  readonly clock: Clock
  /** Told of each change, in its unit of work (the events). */
  readonly changed?: PostChanged
  /** The service's own images a content shows, rendered with their variants (absent: rendered as any image). */
  readonly images?: (content: string) => Promise<ContentImages>
  /** The facts of image `id`, or null when there is none (then the write is 422 UNKNOWN_MEDIA). */
  readonly featureImage?: (id: string) => Promise<ImageFacts | null>
  /** The users whose slugs these are, by slug (absent: only a person's own slug is known). */
  readonly bylines?: (slugs: readonly string[]) => Promise<ReadonlyMap<string, Byline>>
  /** Brings the full-text index up to every answered write, before a list that searches (`q`). */
  readonly searchCurrent?: () => Promise<void>
}

function notFound (id: number): AppError {
  return new AppError('POST_NOT_FOUND', `No post ${id} exists, or you may not see it.`)
}

function slugTaken (slug: PostWrite['slug']): AppError {
  const name = slug !== null && 'given' in slug ? slug.given : ''
  return new AppError('SLUG_TAKEN', `The slug "${name}" is held by another post (as its own or as an old one). Choose another.`)
}

/**
 * The rules of posts: who sees and changes what, optimistic concurrency, scheduling, and the
 * revision every change records in the same unit of work. Built on a unit of work's repositories
 * for writes (`new PostService(uow, opts)`), on the store's for reads.
 */
export class PostService {
  private readonly clock: Clock
  private readonly changed: PostChanged

  constructor (private readonly repos: PostRepositories, private readonly opts: PostServiceOptions) {
    this.clock = opts.clock
    this.changed = opts.changed ?? (() => {})
  }

  private get store (): PostStore { return this.repos.posts }

  /** The facts of the feature image a write names; 422 UNKNOWN_MEDIA for an id that names none. */
  private async featureImage (id: string | null): Promise<ImageFacts | null> {
    if (id === null) return null
    const facts = await this.opts.featureImage?.(id) ?? null
    if (facts === null) throw validationFailed([fieldError('feature_image', 'UNKNOWN_MEDIA')])
    return facts
  }

  /**
   * The listed authors a write stores: those the input names (an editor's or an admin's choice;
   * anyone else may only name the post's own), else a person's create is theirs alone and a replace
   * keeps the post's. Undefined: none to write (a create by a principal that is no person, or a replace keeping them).
   */
  private async authors (input: PostInput, viewer: Principal, current: Post | null): Promise<Byline[] | undefined> {
    const person = viewer.person
    const own = current === null ? (person === undefined ? [] : [person.slug]) : current.authors
    const wanted = input.authors ?? (current === null ? own : undefined)
    if (wanted === undefined || (wanted.length === 0 && own.length === 0)) return undefined
    if (wanted.length === 0) throw validationFailed([fieldError('authors', 'TOO_SHORT', 'A post names 1 to 10 authors.')])
    const same = wanted.length === own.length && wanted.every((s, i) => s === own[i])
    if (!same && !may(viewer, 'posts.any')) throw new AppError('ROLE_FORBIDS', 'Only an editor or above names a post\'s authors: your role keeps the post\'s own.')
    if (current === null && same && person !== undefined) return [{ id: person.id, slug: person.slug }]
    const known = await this.opts.bylines?.(wanted) ?? new Map<string, Byline>()
    const unknown = wanted.filter(s => !known.has(s))
    if (unknown.length > 0) {
      throw new AppError('UNKNOWN_AUTHOR', `No user has the slug${unknown.length > 1 ? 's' : ''} ${unknown.map(s => `"${s}"`).join(', ')}.`, {
        errors: wanted.flatMap((s, i) => known.has(s) ? [] : [fieldError(`authors/${i}`, 'UNKNOWN_AUTHOR')]),
      })
    }
    return wanted.map(s => known.get(s)!)
  }

  async get (id: number, viewer: Viewer): Promise<Post> {
    const post = await this.store.findById(id, viewer)
    if (!post) throw notFound(id)
    return post
  }

  /** The post with this slug, or the current slug of the post it is an old slug of. */
  async getBySlug (slug: string, viewer: Viewer): Promise<{ post: Post } | { movedTo: string }> {
    const found = await this.store.findBySlug(slug, viewer)
    if (found === null) throw new AppError('POST_NOT_FOUND', `No post has the slug "${slug}", or you may not see it.`)
    return found
  }

  async list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>> {
    await this.searchable(query.filter)
    return await this.store.list(query, viewer)
  }

  /** `list` without the posts' content. */
  async listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>> {
    await this.searchable(query.filter)
    return await this.store.listSummaries(query, viewer)
  }

  /** A search reads its own writes: the index first takes every write answered before it. */
  private async searchable (filter: PostFilter): Promise<void> {
    if (filter.q !== undefined) await this.opts.searchCurrent?.()
  }

  async tags (query: ListQuery<string, TagsQuery>, viewer: Viewer): Promise<ListPage<TagCount>> {
    return await this.store.tags(query, viewer)
  }

  /** `adjust` changes what is written beyond what a client may set (a move from another service: its slug base, its date). */
  async create (input: PostInput, author: Principal, adjust: (write: NewPostWrite) => NewPostWrite = w => w): Promise<Post> {
    statusAllowed(author, input.status)
    const now = this.clock.now()
    const scheduled = applySchedule(input, null, now)
    const write = adjust(newPostWrite(scheduled, now, {
      images: await this.opts.images?.(input.content),
      featureImage: await this.featureImage(input.featureImage ?? null),
      authors: await this.authors(input, author, null),
    }))
    let post: Post
    try {
      post = await this.store.create(write, author.subject, now)
    } catch (err) {
      if (err instanceof SlugTakenError) throw slugTaken(write.slug)
      throw err
    }
    this.changed(null, post)
    await this.rescheduled(null, post)
    return await this.recorded(post, author.subject, now)
  }

  /** Replaces a post with the input `build` makes from the current one (PUT uses the body; PATCH applies a patch). */
  async update (id: number, viewer: Principal, build: (current: Post) => PostInput, precondition?: Precondition): Promise<Post> {
    // The core's compare-and-set: a write that lost a race is done again from the post as it now
    // is (an edit, or the scheduled switch, got there first), unless the client named a precondition.
    const { before, after, now } = await writeCurrent(precondition, async () => await this.writable(id, viewer), async current => {
      const now = this.clock.now()
      const input = build(current)
      statusAllowed(viewer, input.status)
      const scheduled = applySchedule(input, current, now)
      const write = postWrite(scheduled, current, now, {
        images: await this.opts.images?.(input.content),
        featureImage: input.featureImage === undefined ? undefined : await this.featureImage(input.featureImage),
        authors: await this.authors(input, viewer, current),
      })
      const result = await this.store.replace(id, write, current.revision, now)
      if (result.outcome === 'slug-taken') throw slugTaken(write.slug)
      return result.outcome === 'done' ? { outcome: 'done', value: { before: current, after: result.value, now } } : result
    }, () => notFound(id))
    this.changed(before, after)
    await this.rescheduled(before, after)
    return await this.recorded(after, viewer.subject, now)
  }

  /** Gives the post the values of its revision `number` (a change like any other: it records a new revision). */
  async restore (id: number, number: number, viewer: Principal, precondition?: Precondition): Promise<Post> {
    const revision = await this.revision(id, number, viewer)
    // A derived excerpt is restored as derived: it follows the restored content.
    const input: PostInput = {
      title: revision.title,
      content: revision.content,
      status: revision.status,
      slug: revision.slug,
      tags: revision.tags,
      excerpt: revision.excerptDerived ? null : revision.excerpt,
      publishAt: revision.publishAt,
      metaTitle: revision.metaTitle,
      metaDescription: revision.metaDescription,
      canonicalUrl: revision.canonicalUrl,
    }
    return await this.update(id, viewer, () => input, precondition)
  }

  async delete (id: number, viewer: Principal, precondition?: Precondition): Promise<void> {
    const before = await writeCurrent(precondition, async () => await this.writable(id, viewer), async current => {
      // The post's revisions go with it (ON DELETE CASCADE), in this statement.
      const result = await this.store.delete(id, current.revision)
      return result.outcome === 'done' ? { outcome: 'done', value: current } : result
    }, () => notFound(id))
    this.changed(before, null)
  }

  /**
   * The scheduled switch of a due post, if it is still scheduled at the revision it was read at:
   * published, with a revision by `system`. Null when another instance or an edit got there first.
   */
  async publishScheduled (due: DuePost): Promise<Post | null> {
    const now = this.clock.now()
    // published_at = publish_at, by the one rule of published_at: only a first publication sets it.
    const publishedAt = publishedAtAfter(due.publishedAt, 'published', new Date(due.publishAt))
    const result = await this.store.publishScheduled(due.id, due.revision, publishedAt, now)
    if (result.outcome !== 'done') return null
    this.changed({ ...result.value, status: 'scheduled', publishAt: due.publishAt }, result.value)
    return await this.recorded(result.value, SYSTEM_EDITOR, now)
  }

  /** A page of the post's revisions, for its author and admins. */
  async revisions (id: number, viewer: Viewer, query: ListQuery<'number', Record<string, never>>): Promise<ListPage<RevisionSummary>> {
    await this.history(id, viewer)
    return await this.repos.revisions.list(id, query)
  }

  async revision (id: number, number: number, viewer: Viewer): Promise<Revision> {
    await this.history(id, viewer)
    const revision = await this.repos.revisions.find(id, number)
    if (revision === null) throw new AppError('REVISION_NOT_FOUND', `Post ${id} has no revision ${number}: it never existed or was pruned.`)
    return revision
  }

  /** Revisions exist only for the post's author and admins; to anyone else, none does. */
  private async history (id: number, viewer: Viewer): Promise<Post> {
    const post = await this.get(id, viewer)
    if (!mayChangePost(viewer, post)) throw new AppError('REVISION_NOT_FOUND', `Post ${id} has no revisions you may see.`)
    return post
  }

  /** Wakes the schedulers of every instance when a change sets, moves or cancels a post's publish_at. */
  private async rescheduled (before: Post | null, after: Post): Promise<void> {
    if (before?.publishAt !== after.publishAt && (before?.publishAt != null || after.publishAt !== null)) {
      await this.repos.signal?.(SCHEDULE_CHANNEL)
    }
  }

  private async recorded (post: Post, editor: string, now: Date): Promise<Post> {
    await this.repos.revisions.record(post, editor, now, this.opts.revisionsKeep)
    return post
  }

  /** The post, if `viewer` may change it: invisible → 404, visible but not theirs → 403. */
  async writable (id: number, viewer: Principal): Promise<Post> {
    const post = await this.get(id, viewer)
    if (!mayChangePost(viewer, post)) {
      if (viewer.person !== undefined) throw new AppError('ROLE_FORBIDS', `Your role (${viewer.person.role}) changes only your own posts: another's post needs the ${ROLE_ACTIONS['posts.any'].least} role.`)
      throw new AppError('FORBIDDEN', 'Only the author of a post or an admin may change it.')
    }
    if (post.publishedAt !== null && !may(viewer, 'posts.publish')) {
      throw new AppError('ROLE_FORBIDS', 'A contributor does not change a post once it has been published: that needs the author role.')
    }
    return post
  }
}

/**
 * Whether `viewer` may change `post`: one of its authors (its principal, or a person it lists), an
 * admin, or a role that works on every post (an editor).
 */
export function mayChangePost (viewer: Viewer, post: Post): boolean {
  if (viewer === null) return false
  if (viewer.subject === post.author || isAdmin(viewer) || may(viewer, 'posts.any')) return true
  return viewer.person !== undefined && post.authors.includes(viewer.person.slug)
}

/** A person whose role may not publish (a contributor) keeps posts drafts: publishing and scheduling are 403. */
function statusAllowed (viewer: Principal, status: PostInput['status']): void {
  if ((status === 'published' || status === 'scheduled') && !may(viewer, 'posts.publish')) {
    throw new AppError('ROLE_FORBIDS', `A contributor writes drafts: a post ${status === 'published' ? 'published' : 'scheduled'} needs the author role.`)
  }
}
