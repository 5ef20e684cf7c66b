//! Cohen's kappa from a confusion matrix: how far two raters agree beyond
//! what their own grade frequencies would give by chance. Pure arithmetic,
//! tested against hand-computed cases and a naive pair-by-pair reference.

/// How much a disagreement between two categories weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// Every disagreement alike (Cohen's kappa).
    Unweighted,
    /// By how many categories apart the two grades are, counted in the
    /// sorted list of categories (linear-weighted kappa), as
    /// scikit-learn's `cohen_kappa_score(weights="linear")` counts them.
    Linear,
}

/// Kappa of `confusion`, a square matrix whose cell `[i][j]` counts the
/// items the first rater put in category `i` and the second in `j`
/// (categories in order). `None` when it is undefined: no items, or both
/// raters always in one and the same category, so chance alone agrees.
pub fn cohen_kappa(confusion: &[Vec<u64>], weights: Weights) -> Option<f64> {
    let n: u64 = confusion.iter().flatten().sum();
    let rows: Vec<f64> = confusion
        .iter()
        .map(|row| row.iter().sum::<u64>() as f64)
        .collect();
    let columns: Vec<f64> = (0..confusion.len())
        .map(|j| confusion.iter().map(|row| row[j]).sum::<u64>() as f64)
        .collect();
    let weight = |i: usize, j: usize| match weights {
        Weights::Unweighted => f64::from(u8::from(i != j)),
        Weights::Linear => i.abs_diff(j) as f64,
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for (i, row) in confusion.iter().enumerate() {
        for (j, &count) in row.iter().enumerate() {
            observed += weight(i, j) * count as f64;
            expected += weight(i, j) * rows[i] * columns[j] / n as f64;
        }
    }
    (n > 0 && expected > 0.0).then(|| 1.0 - observed / expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook form: observed agreement p_o against chance p_e.
    fn naive_unweighted(pairs: &[(usize, usize)], categories: usize) -> f64 {
        let n = pairs.len() as f64;
        let p_o = pairs.iter().filter(|(a, b)| a == b).count() as f64 / n;
        let p_e: f64 = (0..categories)
            .map(|c| {
                let a = pairs.iter().filter(|p| p.0 == c).count() as f64 / n;
                let b = pairs.iter().filter(|p| p.1 == c).count() as f64 / n;
                a * b
            })
            .sum();
        (p_o - p_e) / (1.0 - p_e)
    }

    fn confusion(pairs: &[(usize, usize)], categories: usize) -> Vec<Vec<u64>> {
        let mut matrix = vec![vec![0; categories]; categories];
        for &(a, b) in pairs {
            matrix[a][b] += 1;
        }
        matrix
    }

    #[test]
    fn unweighted_kappa_matches_the_textbook_example() {
        // 50 items: both yes 20, both no 15, yes/no 5, no/yes 10.
        // p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4.
        let matrix = vec![vec![20, 5], vec![10, 15]];
        let kappa = cohen_kappa(&matrix, Weights::Unweighted).unwrap();
        assert!((kappa - 0.4).abs() < 1e-12, "{kappa}");
    }

    #[test]
    fn linear_weights_count_categories_apart() {
        // Two items: (0, 2) and (2, 0). Observed weight 2 + 2 = 4; rows
        // and columns are 1 at 0 and at 2, so expected is
        // (0*1/2 + 2*1/2 + 2*1/2 + 0*1/2) = 2: kappa = 1 - 4/2 = -1.
        let matrix = vec![vec![0, 0, 1], vec![0, 0, 0], vec![1, 0, 0]];
        let kappa = cohen_kappa(&matrix, Weights::Linear).unwrap();
        assert!((kappa + 1.0).abs() < 1e-12, "{kappa}");
        // Pairs (0,0) (1,1) (1,2) (2,2): observed weight 1; rows 1,2,1
        // and columns 1,1,2 over n = 4, so expected = sum |i-j| r_i c_j / n
        // = (1 + 4 + 2 + 4 + 2 + 1) / 4 = 14/4, and kappa = 1 - 4/14.
        let matrix = confusion(&[(0, 0), (1, 1), (1, 2), (2, 2)], 3);
        let kappa = cohen_kappa(&matrix, Weights::Linear).unwrap();
        assert!((kappa - (1.0 - 4.0 / 14.0)).abs() < 1e-12, "{kappa}");
    }

    #[test]
    fn unweighted_kappa_agrees_with_the_naive_form() {
        let pairs = [
            (0, 0),
            (1, 1),
            (2, 1),
            (3, 3),
            (0, 1),
            (2, 2),
            (1, 0),
            (3, 2),
            (2, 2),
            (0, 0),
        ];
        let kappa = cohen_kappa(&confusion(&pairs, 4), Weights::Unweighted).unwrap();
        assert!((kappa - naive_unweighted(&pairs, 4)).abs() < 1e-12);
    }

    #[test]
    fn kappa_is_undefined_without_items_or_without_variety() {
        assert_eq!(cohen_kappa(&[], Weights::Unweighted), None);
        assert_eq!(
            cohen_kappa(&[vec![0, 0], vec![0, 0]], Weights::Linear),
            None
        );
        // Both always say "relevant": chance agrees on every item.
        assert_eq!(
            cohen_kappa(&[vec![0, 0], vec![0, 7]], Weights::Unweighted),
            None
        );
        // Perfect agreement with variety is 1.
        let perfect = cohen_kappa(&[vec![3, 0], vec![0, 7]], Weights::Unweighted);
        assert_eq!(perfect, Some(1.0));
    }
}
