//! Hive partitions: the `key=value` folders of a log's path below the
//! LOGS folder that named it, which are fields of every record under
//! them, as Spark and pyarrow read a partition column. The one place a
//! partition is read from a path and a field looked up in it, whatever
//! the format: a partition's value wins over a record's field, a column
//! or a span attribute of the same name.

use crate::io::location::percent_decoded;

/// The `key=value` segments of a path, in order, their values
/// percent-decoded as Hive and Spark escape them.
pub type Partition = Vec<(String, String)>;

/// The Hive partition of a log at `relative`, its path (or key) below the
/// folder (or prefix) a LOGS argument named: each `key=value` segment of
/// its folders. A file named directly has none.
pub fn partition(relative: &str) -> Partition {
    let mut folders: Vec<&str> = relative.split('/').filter(|s| !s.is_empty()).collect();
    folders.pop();
    folders
        .into_iter()
        .filter_map(|segment| {
            let (key, value) = segment.split_once('=')?;
            (!key.is_empty()).then(|| (percent_decoded(key), percent_decoded(value)))
        })
        .collect()
}

/// The partition of input `input`, each input's in `partitions`: none for
/// an input past them (one handed over).
pub fn partition_of(partitions: &[Partition], input: u32) -> &[(String, String)] {
    partitions.get(input as usize).map_or(&[], Vec::as_slice)
}

/// The value `partition` gives the field whose name is `segments`, if one
/// of its keys is that name: the one lookup every format makes before its
/// own, since the partition's value wins over a field, column or
/// attribute of the same name in the record, as Spark and pyarrow read a
/// partition column. A pointer into a record (more than one segment)
/// names no partition key.
pub fn partition_value<'p>(
    partition: &'p [(String, String)],
    segments: &[impl AsRef<str>],
) -> Option<&'p str> {
    let [name] = segments else {
        return None;
    };
    (partition.iter())
        .find(|(key, _)| key == name.as_ref())
        .map(|(_, value)| value.as_str())
}
