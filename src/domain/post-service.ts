import { AppError } from '../errors.ts'
import type { ListPage, ListQuery, PostFilter, PostStore } from '../store/store.ts'
import type { Post, PostInput, PostSortKey, PostSummary } from './post.ts'
import { mayChange, type Principal, type Viewer } from './principal.ts'

/** A client's condition on the current post (If-Match, If-Unmodified-Since); true to go ahead. */
export type Precondition = (current: Post) => boolean

/** Told of each change a write made, in its unit of work: the post before (null: created) and after (null: deleted). */
export type PostChanged = (before: Post | null, after: Post | null) => void

const always: Precondition = () => true
const RETRIES = 5

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

  async list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>> {
    return await this.store.list(query, viewer)
  }

  /** `list` without the posts' content. */
  async listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>> {
    return await this.store.listSummaries(query, viewer)
  }

  async create (input: PostInput, author: Principal): Promise<Post> {
    const post = await this.store.create(input, author.subject, this.clock())
    this.changed(null, post)
    return post
  }

  /** Replaces a post with the input `build` makes from the current one (PUT uses the body; PATCH applies a patch). */
  async update (id: number, viewer: Principal, build: (current: Post) => PostInput, precondition: Precondition = always): Promise<Post> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.writable(id, viewer)
      if (!precondition(current)) throw new AppError('PRECONDITION_FAILED')
      const result = await this.store.replace(id, build(current), current.revision, this.clock())
      if (result.outcome === 'done') {
        this.changed(current, result.value)
        return result.value
      }
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
