import { mayChange, type Principal, type Viewer } from '../../domain/principal.ts'
import { AppError } from '../../errors.ts'
import { writeCurrent } from '../../http/action.ts'
import type { ListPage, ListQuery } from '../../store/store.ts'
import type { Post, PostInput, PostSortKey, PostSummary } from './post.ts'
import type { PostFilter, PostStore } from './store.ts'

/** A client's condition on the current post (If-Match, If-Unmodified-Since); true to go ahead. */
export type Precondition = (current: Post) => boolean

const notFound = (id: number) => new AppError('POST_NOT_FOUND', `No post ${id} exists, or you may not see it.`)

/**
 * The rules of posts: who sees and changes what; a change is the core's compare-and-set
 * (writeCurrent, as orders' actions). Built on a unit of work's repository for writes
 * (`new PostService(uow.posts)`), on the store's for reads.
 */
export class PostService {
  constructor (private readonly store: PostStore, private readonly clock: () => Date = () => new Date()) {}

  async get (id: number, viewer: Viewer): Promise<Post> {
    const post = await this.store.findById(id, viewer)
    if (!post) throw notFound(id)
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
    return await this.store.create(input, author.subject, this.clock())
  }

  /** Replaces a post with the input `build` makes from the current one (PUT uses the body; PATCH applies a patch). */
  async update (id: number, viewer: Principal, build: (current: Post) => PostInput, precondition?: Precondition): Promise<Post> {
    return await writeCurrent(precondition, async () => await this.writable(id, viewer),
      async current => await this.store.replace(id, build(current), current.revision, this.clock()), () => notFound(id))
  }

  async delete (id: number, viewer: Principal, precondition?: Precondition): Promise<void> {
    await writeCurrent(precondition, async () => await this.writable(id, viewer),
      async current => await this.store.delete(id, current.revision), () => notFound(id))
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
