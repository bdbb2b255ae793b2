//! `makemore-mlp lecture --out DIR [--quick] [--seed S] [--steps K] [--lr-find] [--fixed-init]`:
//! lecture 3 end to end, checked against the lecture's numbers.

mod lecture;

use std::process::ExitCode;

fn main() -> ExitCode {
    let about = "Lecture 3: makemore part 2, the character MLP";
    report::lecture_main(about, tensor::check_threads_env(), 2, lecture::run)
}
