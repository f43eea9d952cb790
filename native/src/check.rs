//! Invariants of decoded columns: what the Python side needs to assemble valid Arrow arrays.
//! Checked by the fuzz targets (`native/fuzz/`) after every input.

use crate::decode::Columns;

impl Columns {
    /// Whether the columns form valid Arrow arrays the Python side can assemble (for fuzzing).
    pub fn check_consistent(&self) -> Result<(), String> {
        let points = self.point_record.len();
        let per_point = [
            self.point_scope.len(),
            self.point_metric.len(),
            self.start_time.len(),
            self.time.len(),
            self.value.len(),
            self.value_int.len(),
            self.value_int_valid.len(),
            self.flags.len(),
            self.attributes.offsets.len() - 1,
        ];
        if per_point.iter().any(|len| *len != points) {
            return Err(format!(
                "point columns of unequal length: {points} vs {per_point:?}"
            ));
        }
        let total: u64 = self.points_per_record.iter().map(|n| u64::from(*n)).sum();
        if total != points as u64 || self.status.len() != self.points_per_record.len() {
            return Err("points_per_record does not add up to the point count".into());
        }
        let scopes = self.scope_record.len();
        let metrics = self.metric_kind.len();
        if self.point_scope.iter().any(|s| *s as usize >= scopes)
            || self.point_metric.iter().any(|m| *m as usize >= metrics)
        {
            return Err("a point refers to a scope or metric that does not exist".into());
        }
        if self
            .start_time
            .iter()
            .chain(self.time.iter())
            .any(|t| *t < 0)
            || self.flags.iter().any(|f| *f < 0)
        {
            return Err("a time or flags value does not fit its column".into());
        }
        for (record, status) in self.status.iter().enumerate() {
            if *status == 0 && self.points_per_record[record] == 0 {
                return Err(format!("record {record} decoded natively without points"));
            }
        }
        for column in [
            &self.scope_name,
            &self.scope_version,
            &self.metric_name,
            &self.metric_unit,
        ] {
            column.check_consistent()?;
        }
        for map in [
            &self.attributes,
            &self.resource_attributes,
            &self.scope_attributes,
        ] {
            map.check_consistent()?;
        }
        Ok(())
    }
}
