mod pipe_read;
mod pipe_write;

pub use self::pipe_read::PipeRead;
pub use self::pipe_write::PipeWrite;
