import { AppError } from '../errors.ts'
import '../resources/posts/content-problems.ts'
import { renderContent } from '../resources/posts/markdown.ts'
import { publishedAtAfter } from '../resources/posts/published-at.ts'
import { deriveSlug } from '../resources/posts/slug.ts'
import { SlugTakenError } from '../store/repositories/posts-repository.ts'
import type { ListPage, ListQuery, PostFilter, PostStore, TagCount, TagsQuery } from '../store/store.ts'
import type { Post, PostInput, PostSortKey, PostSummary, PostWrite } from './post.ts'
import { mayChange, type Principal, type Viewer } from './principal.ts'

/** A client's condition on the current post (If-Match, If-Unmodified-Since); true to go ahead. */
export type Precondition = (current: Post) => boolean

/** Told of each change a write made, in its unit of work: the post before (null: created) and after (null: deleted). */
export type PostChanged = (before: Post | null, after: Post | null) => void

const always: Precondition = () => true
const RETRIES = 5

function sameTags (a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i])
}

/**
 * What the store writes for `input` over `current` (null on create): the HTML and derived excerpt
 * from one parse of the content, `published_at` by its one rule, the slug to claim (derived on
 * create when absent; on replace only when it changes), the tags only when they change.
 */
export function postWrite (input: PostInput, current: Post | null, now: Date): PostWrite {
  const rendered = renderContent(input.content)
  // An excerpt sent back as it was derived (a GET-modify-PUT round trip, a merge patch of other
  // members) stays derived, so it follows the content.
  const derived = input.excerpt === null || (current !== null && current.excerptDerived && input.excerpt === current.excerpt)
  const slug = current === null
    ? (input.slug !== undefined ? { given: input.slug } : { derived: deriveSlug(input.title) })
    : (input.slug !== undefined && input.slug !== current.slug ? { given: input.slug } : null)
  return {
    title: input.title,
    content: input.content,
    status: input.status,
    slug,
    tags: current !== null && sameTags(current.tags, input.tags) ? null : input.tags,
    excerpt: derived ? rendered.excerpt : input.excerpt!,
    excerptDerived: derived,
    contentHtml: rendered.html,
    publishedAt: publishedAtAfter(current?.publishedAt ?? null, input.status, now),
  }
}

function slugTaken (slug: PostWrite['slug']): AppError {
  const name = slug !== null && 'given' in slug ? slug.given : ''
  return new AppError('SLUG_TAKEN', `The slug "${name}" is held by another post (as its own or as an old one). Choose another.`)
}

/**
 * The rules of posts: who sees and changes what, and optimistic concurrency. Built on a unit of
 * work's repository for writes (`new PostService(uow.posts)`), on the store's for reads.
 */
export class PostService {
  constructor (private readonly store: PostStore, private readonly clock: () => Date = () => new Date(), private readonly changed: PostChanged = () => {}) {}

  async get (id: number, viewer: Viewer): Promise<Post> {
    const post = await this.store.findById(id, viewer)
    if (!post) throw new AppError('POST_NOT_FOUND', `No post ${id} exists, or you may not see it.`)
    return post
  }

  /** The post with this slug, or the current slug of the post it is an old slug of. */
  async getBySlug (slug: string, viewer: Viewer): Promise<{ post: Post } | { movedTo: string }> {
    const found = await this.store.findBySlug(slug, viewer)
    if (found === null) throw new AppError('POST_NOT_FOUND', `No post has the slug "${slug}", or you may not see it.`)
    return found
  }

  async list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>> {
    return await this.store.list(query, viewer)
  }

  /** `list` without the posts' content. */
  async listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>> {
    return await this.store.listSummaries(query, viewer)
  }

  async tags (query: ListQuery<string, TagsQuery>, viewer: Viewer): Promise<ListPage<TagCount>> {
    return await this.store.tags(query, viewer)
  }

  async create (input: PostInput, author: Principal): Promise<Post> {
    const now = this.clock()
    const write = postWrite(input, null, now)
    let post: Post
    try {
      post = await this.store.create(write, author.subject, now)
    } catch (err) {
      if (err instanceof SlugTakenError) throw slugTaken(write.slug)
      throw err
    }
    this.changed(null, post)
    return post
  }

  /** Replaces a post with the input `build` makes from the current one (PUT uses the body; PATCH applies a patch). */
  async update (id: number, viewer: Principal, build: (current: Post) => PostInput, precondition: Precondition = always): Promise<Post> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.writable(id, viewer)
      if (!precondition(current)) throw new AppError('PRECONDITION_FAILED')
      const now = this.clock()
      const write = postWrite(build(current), current, now)
      const result = await this.store.replace(id, write, current.revision, now)
      if (result.outcome === 'done') {
        this.changed(current, result.value)
        return result.value
      }
      if (result.outcome === 'slug-taken') throw slugTaken(write.slug)
      if (result.outcome === 'missing') throw new AppError('POST_NOT_FOUND', `No post ${id} exists, or you may not see it.`)
      // Someone else wrote between our read and our write. With a client precondition that is
      // the client's lost update (412); without one, read again and retry.
      if (precondition !== always || attempt >= RETRIES) throw new AppError('PRECONDITION_FAILED')
    }
  }

  async delete (id: number, viewer: Principal, precondition: Precondition = always): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.writable(id, viewer)
      if (!precondition(current)) throw new AppError('PRECONDITION_FAILED')
      const result = await this.store.delete(id, current.revision)
      if (result.outcome === 'done') {
        this.changed(current, null)
        return
      }
      if (result.outcome === 'missing') throw new AppError('POST_NOT_FOUND', `No post ${id} exists, or you may not see it.`)
      if (precondition !== always || attempt >= RETRIES) throw new AppError('PRECONDITION_FAILED')
    }
  }

  /** The post, if `viewer` may change it: invisible → 404, visible but not theirs → 403. */
  private async writable (id: number, viewer: Principal): Promise<Post> {
    const post = await this.get(id, viewer)
    if (!mayChange(viewer, post.author)) {
      throw new AppError('FORBIDDEN', 'Only the author of a post or an admin may change it.')
    }
    return post
  }
}
