//! nanochat's `dataset.py`: the pretraining text as parquet shards (`shard_00000.parquet`, …),
//! each a `text` column in row groups of 1,024 documents, zstd-compressed; the last shard is
//! val. Read here with the `parquet` crate's row reader, a row group at a time, as
//! `dataloader.py` reads them.

use crate::dataloader::DocumentSource;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use std::path::{Path, PathBuf};

/// The `.parquet` files of `dir`, in name order (`list_parquet_files`; `.tmp` files skipped).
pub fn list_parquet_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    Ok(files)
}

/// Shards on disk, opened when first read; every error names the file.
pub struct ParquetShards {
    files: Vec<PathBuf>,
    open: Option<(usize, SerializedFileReader<std::fs::File>)>,
}

impl ParquetShards {
    /// The files, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The shards `files`, in that order.
    pub fn new(files: Vec<PathBuf>) -> ParquetShards {
        ParquetShards { files, open: None }
    }

    /// The train shards (all but the last) and the val shard (the last) of `dir`.
    pub fn train_val(dir: &Path) -> Result<(ParquetShards, ParquetShards), String> {
        let mut files = list_parquet_files(dir)?;
        if files.len() < 2 {
            return Err(format!(
                "{}: {} parquet shard(s); training needs two or more (the last is val)",
                dir.display(),
                files.len()
            ));
        }
        let val = files.pop().expect("two or more");
        Ok((ParquetShards::new(files), ParquetShards::new(vec![val])))
    }

    fn reader(&mut self, file: usize) -> Result<&SerializedFileReader<std::fs::File>, String> {
        if self.open.as_ref().map(|(i, _)| *i) != Some(file) {
            let path = &self.files[file];
            let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let reader = SerializedFileReader::new(f)
                .map_err(|e| format!("{}: not a readable parquet file ({e})", path.display()))?;
            self.open = Some((file, reader));
        }
        Ok(&self.open.as_ref().expect("just opened").1)
    }
}

impl Clone for ParquetShards {
    /// The same shards, none of them open: a fresh loader's source.
    fn clone(&self) -> ParquetShards {
        ParquetShards::new(self.files.clone())
    }
}

impl DocumentSource for ParquetShards {
    fn num_files(&self) -> usize {
        self.files.len()
    }

    fn num_row_groups(&mut self, file: usize) -> Result<usize, String> {
        Ok(self.reader(file)?.num_row_groups())
    }

    fn read_row_group(&mut self, file: usize, row_group: usize) -> Result<Vec<String>, String> {
        let path = self.files[file].clone();
        let reader = self.reader(file)?;
        let fail = |e: parquet::errors::ParquetError| {
            format!(
                "{}: row group {row_group} cannot be read ({e})",
                path.display()
            )
        };
        let group = reader.get_row_group(row_group).map_err(fail)?;
        let mut texts = Vec::new();
        for row in group.get_row_iter(None).map_err(fail)? {
            let row = row.map_err(fail)?;
            let text = row
                .get_column_iter()
                .find(|(name, _)| name.as_str() == "text");
            match text {
                Some((_, Field::Str(s))) => texts.push(s.clone()),
                Some((_, Field::Null)) => {}
                Some((_, other)) => {
                    return Err(format!(
                        "{}: the text column holds {other:?}, not strings",
                        path.display()
                    ))
                }
                None => return Err(format!("{}: no `text` column", path.display())),
            }
        }
        Ok(texts)
    }
}
