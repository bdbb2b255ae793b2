//! A target: one number the lecture printed, and what we measured.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a target is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A final loss after training: the lecture's number ± a band.
    Band,
    /// A value fixed by seeds (an init loss, a count): within a small tolerance.
    Exact,
    /// Strings or integers that must be equal (samples, ids, sizes).
    String,
    /// A measured value that must stay below a bound (`--quick` runs).
    Below,
    /// Reported, never gating.
    Info,
}

/// One expected value with its measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// What is measured, e.g. "val loss".
    pub name: String,
    /// How it is judged.
    pub kind: Kind,
    /// The lecture's value (a number or a string).
    pub expected: Value,
    /// The allowed distance for `band` and `exact`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// What this run measured.
    pub measured: Value,
    /// Whether the measurement meets the expectation (always recorded, even for `info`).
    pub pass: bool,
}

fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

impl Target {
    /// `|measured - expected| <= tolerance`, for final losses after training.
    pub fn band(name: &str, expected: f64, tolerance: f64, measured: f64) -> Target {
        Target::within(Kind::Band, name, expected, tolerance, measured)
    }

    /// `|measured - expected| <= tolerance`, for values that seeds fix.
    pub fn exact(name: &str, expected: f64, tolerance: f64, measured: f64) -> Target {
        Target::within(Kind::Exact, name, expected, tolerance, measured)
    }

    fn within(kind: Kind, name: &str, expected: f64, tolerance: f64, measured: f64) -> Target {
        Target {
            name: name.to_string(),
            kind,
            expected: number(expected),
            tolerance: Some(tolerance),
            measured: number(measured),
            // A NaN measurement fails: the comparison is false.
            pass: (measured - expected).abs() <= tolerance,
        }
    }

    /// Equality of strings (or of anything formatted as one: counts, id lists).
    pub fn string(name: &str, expected: &str, measured: &str) -> Target {
        Target {
            name: name.to_string(),
            kind: Kind::String,
            expected: Value::String(expected.to_string()),
            tolerance: None,
            measured: Value::String(measured.to_string()),
            pass: expected == measured,
        }
    }

    /// `measured < bound`.
    pub fn below(name: &str, bound: f64, measured: f64) -> Target {
        Target {
            name: name.to_string(),
            kind: Kind::Below,
            expected: number(bound),
            tolerance: None,
            measured: number(measured),
            pass: measured < bound,
        }
    }

    /// Every `|measured[i] - expected[i]| <= tolerance`, for a list of values
    /// fixed by seeds (the losses a notebook prints every 10,000 steps). Lists
    /// of different lengths fail: a missing value is never a pass.
    pub fn all_within(name: &str, expected: &[f64], tolerance: f64, measured: &[f64]) -> Target {
        let pass = expected.len() == measured.len()
            && expected
                .iter()
                .zip(measured)
                .all(|(e, m)| (m - e).abs() <= tolerance);
        let list = |xs: &[f64]| Value::Array(xs.iter().map(|&x| number(x)).collect());
        Target {
            name: name.to_string(),
            kind: Kind::Exact,
            expected: list(expected),
            tolerance: Some(tolerance),
            measured: list(measured),
            pass,
        }
    }

    /// A reported number with no expectation.
    pub fn info(name: &str, measured: f64) -> Target {
        Target {
            name: name.to_string(),
            kind: Kind::Info,
            expected: Value::Null,
            tolerance: None,
            measured: number(measured),
            pass: true,
        }
    }

    /// The same comparison, reported but not gating: for targets that need the
    /// full run when `--steps` shortened it.
    pub fn ungated(mut self) -> Target {
        self.kind = Kind::Info;
        self
    }

    /// Whether this target decides the exit code.
    pub fn gates(&self) -> bool {
        self.kind != Kind::Info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_passes_inside_and_fails_outside() {
        assert!(Target::band("val", 2.1701, 0.03, 2.19).pass);
        assert!(!Target::band("val", 2.1701, 0.03, 2.21).pass);
        assert!(!Target::band("val", 2.1701, 0.03, f64::NAN).pass);
    }

    #[test]
    fn all_within_checks_every_value_and_the_lengths() {
        let printed = [3.3239, 2.0322, 2.5675];
        assert!(Target::all_within("10k", &printed, 5e-5, &[3.32394, 2.03215, 2.5675]).pass);
        assert!(!Target::all_within("10k", &printed, 5e-5, &[3.3239, 2.0324, 2.5675]).pass);
        assert!(!Target::all_within("10k", &printed, 5e-5, &printed[..2]).pass);
        assert!(!Target::all_within("10k", &printed, 5e-5, &[3.3239, 2.0322, 2.5675, 1.0]).pass);
        assert!(!Target::all_within("10k", &printed, 5e-5, &[3.3239, f64::NAN, 2.5675]).pass);
    }

    #[test]
    fn ungated_keeps_the_verdict_but_does_not_gate() {
        let t = Target::exact("init", 3.3, 1e-5, 3.4).ungated();
        assert!(!t.pass);
        assert!(!t.gates());
    }

    #[test]
    fn serializes_with_the_schema_names() {
        let json = serde_json::to_value(Target::below("loss", 2.6, 2.5)).unwrap();
        assert_eq!(json["kind"], "below");
        assert_eq!(json["expected"], 2.6);
        assert_eq!(json["pass"], true);
        assert!(json.get("tolerance").is_none());
    }
}
