//! How far raters agree beyond what chance would give: Cohen's kappa for
//! two raters (`rgrade agree`), Fleiss' kappa for several (reviewers in one
//! key), and Krippendorff's alpha on ordered grades for any number of
//! raters, each item rated by as many as rated it. Pure arithmetic, tested
//! against hand-computed cases and naive item-by-item references.

/// How much a disagreement between two categories weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// Every disagreement alike (Cohen's kappa).
    Unweighted,
    /// By how many categories apart the two grades are, counted in the
    /// sorted list of categories (linear-weighted kappa), as
    /// scikit-learn's `cohen_kappa_score(weights="linear")` counts them.
    Linear,
    /// By the square of how many categories apart (quadratic-weighted
    /// kappa), as `cohen_kappa_score(weights="quadratic")`.
    Quadratic,
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
        Weights::Quadratic => (i.abs_diff(j) as f64).powi(2),
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

/// Fleiss' kappa over items each rated by at least two raters: `items`
/// holds, for each distinct way of rating, how many raters put the item
/// in each category (the same categories, in the same order, for every
/// item) and how many items were rated so. An item's observed agreement
/// is the share of its pairs of raters that agree; chance agreement comes
/// from the categories' shares over all ratings. Items may have different
/// numbers of raters; with the same number for all, this is Fleiss (1971)
/// as statsmodels' `fleiss_kappa` computes it. `None` when undefined: no
/// item, or every rating in one category.
pub fn fleiss_kappa(items: &[(Vec<u64>, u64)]) -> Option<f64> {
    let categories = items.first().map_or(0, |(counts, _)| counts.len());
    let mut totals = vec![0.0; categories];
    let (mut agreement, mut n_items, mut ratings) = (0.0, 0.0, 0.0);
    for (counts, times) in items {
        let raters: u64 = counts.iter().sum();
        debug_assert!(raters >= 2 && counts.len() == categories);
        let agreeing: u64 = counts.iter().map(|&c| c * c.saturating_sub(1)).sum();
        let times = *times as f64;
        agreement += times * agreeing as f64 / (raters * (raters - 1)) as f64;
        n_items += times;
        ratings += times * raters as f64;
        for (total, &count) in totals.iter_mut().zip(counts) {
            *total += times * count as f64;
        }
    }
    let observed = agreement / n_items;
    let chance: f64 = totals.iter().map(|t| (t / ratings).powi(2)).sum();
    (n_items > 0.0 && chance < 1.0).then(|| (observed - chance) / (1.0 - chance))
}

/// Krippendorff's alpha for ordinal data over `items`, given as
/// [`fleiss_kappa`] takes them (how many raters put the item in each
/// category, categories in order, and how many items were rated so), but
/// any number of raters per item: an item only one rater rated pairs with
/// nothing and counts for nothing, as in Krippendorff (2011). Two grades
/// are as far apart as the ratings between them: the squared count of
/// ratings from one category to the other, less half of each end's
/// (the ordinal metric, so that grades 0, 1, 3 are ranks, not numbers).
/// `None` when undefined: fewer than two pairable ratings, or all in one
/// category.
pub fn krippendorff_alpha_ordinal(items: &[(Vec<u64>, u64)]) -> Option<f64> {
    let categories = items.first().map_or(0, |(counts, _)| counts.len());
    // The coincidence matrix: each ordered pair of ratings of one item,
    // weighed 1 / (raters - 1) so that an item counts as its ratings.
    let mut coincidences = vec![vec![0.0; categories]; categories];
    for (counts, times) in items {
        let raters: u64 = counts.iter().sum();
        if raters < 2 {
            continue;
        }
        let weight = *times as f64 / (raters - 1) as f64;
        for (c, &in_c) in counts.iter().enumerate() {
            for (k, &in_k) in counts.iter().enumerate() {
                let pairs = in_c * if c == k { in_k.saturating_sub(1) } else { in_k };
                coincidences[c][k] += weight * pairs as f64;
            }
        }
    }
    let totals: Vec<f64> = coincidences.iter().map(|row| row.iter().sum()).collect();
    let n: f64 = totals.iter().sum();
    let distance = |c: usize, k: usize| {
        let between: f64 = totals[c.min(k)..=c.max(k)].iter().sum();
        (between - (totals[c] + totals[k]) / 2.0).powi(2)
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for (c, row) in coincidences.iter().enumerate() {
        for (k, &count) in row.iter().enumerate() {
            observed += count * distance(c, k);
            expected += totals[c] * totals[k] * distance(c, k);
        }
    }
    (n > 1.0 && expected > 0.0).then(|| 1.0 - (n - 1.0) * observed / expected)
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

    /// Fleiss' kappa item by item, each item a list of category indices.
    fn naive_fleiss(items: &[Vec<usize>], categories: usize) -> f64 {
        let mut shares = vec![0.0; categories];
        let mut observed = 0.0;
        let ratings: usize = items.iter().map(Vec::len).sum();
        for item in items {
            let n = item.len() as f64;
            let mut agreeing_pairs = 0.0;
            for (a, x) in item.iter().enumerate() {
                shares[*x] += 1.0 / ratings as f64;
                for y in &item[a + 1..] {
                    agreeing_pairs += f64::from(u8::from(x == y));
                }
            }
            observed += agreeing_pairs / (n * (n - 1.0) / 2.0) / items.len() as f64;
        }
        let chance: f64 = shares.iter().map(|p| p * p).sum();
        (observed - chance) / (1.0 - chance)
    }

    fn tallied(items: &[Vec<usize>], categories: usize) -> Vec<(Vec<u64>, u64)> {
        let mut tally: Vec<(Vec<u64>, u64)> = Vec::new();
        for item in items {
            let mut counts = vec![0; categories];
            for &c in item {
                counts[c] += 1;
            }
            match tally.iter_mut().find(|(seen, _)| *seen == counts) {
                Some((_, times)) => *times += 1,
                None => tally.push((counts, 1)),
            }
        }
        tally
    }

    #[test]
    fn fleiss_kappa_matches_the_textbook_example() {
        // Fleiss (1971) style: 4 items, 3 raters, 2 categories.
        // Item agreements: 1, 1/3, 1/3, 1 -> P = 2/3. Shares: 7/12 and
        // 5/12 -> chance = 74/144. kappa = (2/3 - 74/144) / (70/144) = 11/35.
        let items = [vec![0, 0, 0], vec![0, 0, 1], vec![0, 1, 0], vec![1, 1, 1]];
        let kappa = fleiss_kappa(&tallied(&items, 2)).unwrap();
        assert!((kappa - 11.0 / 35.0).abs() < 1e-12, "{kappa}");
    }

    #[test]
    fn fleiss_kappa_agrees_with_the_naive_form_for_any_number_of_raters() {
        let items = [
            vec![0, 0],
            vec![1, 2, 2],
            vec![3, 3, 3, 1],
            vec![2, 2],
            vec![0, 1],
            vec![1, 1, 1],
            vec![2, 3, 2],
            vec![0, 0],
        ];
        let kappa = fleiss_kappa(&tallied(&items, 4)).unwrap();
        assert!((kappa - naive_fleiss(&items, 4)).abs() < 1e-12, "{kappa}");
        // Two raters on every item: the textbook Fleiss form, which is
        // Scott's pi, not Cohen's kappa (chance from the pooled shares).
        let two = [vec![0, 0], vec![0, 1], vec![1, 1], vec![1, 1], vec![1, 0]];
        let kappa = fleiss_kappa(&tallied(&two, 2)).unwrap();
        assert!((kappa - naive_fleiss(&two, 2)).abs() < 1e-12);
    }

    #[test]
    fn quadratic_weights_count_squared_distances() {
        // Pairs (0,0) (1,1) (1,2) (2,2): observed weight 1; rows 1,2,1 and
        // columns 1,1,2 over n = 4, so expected = sum (i-j)^2 r_i c_j / n =
        // (1*1*1 + 4*1*2 + 1*2*1 + 1*2*2 + 4*1*1 + 1*1*1) / 4 = 20/4, and
        // kappa = 1 - 4/20.
        let matrix = confusion(&[(0, 0), (1, 1), (1, 2), (2, 2)], 3);
        let kappa = cohen_kappa(&matrix, Weights::Quadratic).unwrap();
        assert!((kappa - 0.8).abs() < 1e-12, "{kappa}");
    }

    /// Krippendorff's alpha value by value: every pairable rating in one
    /// list, each ordered pair of an item's ratings weighed 1 / (m - 1),
    /// expected disagreement over every ordered pair of the list.
    fn naive_alpha_ordinal(items: &[Vec<usize>], categories: usize) -> f64 {
        let pairable: Vec<&Vec<usize>> = items.iter().filter(|item| item.len() > 1).collect();
        let values: Vec<usize> = pairable
            .iter()
            .flat_map(|item| item.iter().copied())
            .collect();
        let n = values.len() as f64;
        let marginal = |c: usize| values.iter().filter(|&&v| v == c).count() as f64;
        let distance = |a: usize, b: usize| {
            let between: f64 = (a.min(b)..=a.max(b)).map(marginal).sum();
            (between - (marginal(a) + marginal(b)) / 2.0).powi(2)
        };
        let mut observed = 0.0;
        for item in &pairable {
            let m = item.len() as f64;
            for (i, &a) in item.iter().enumerate() {
                for (j, &b) in item.iter().enumerate() {
                    if i != j {
                        observed += distance(a, b) / (m - 1.0) / n;
                    }
                }
            }
        }
        let mut expected = 0.0;
        for (i, &a) in values.iter().enumerate() {
            for (j, &b) in values.iter().enumerate() {
                if i != j {
                    expected += distance(a, b) / (n * (n - 1.0));
                }
            }
        }
        assert!(categories > 0);
        1.0 - observed / expected
    }

    #[test]
    fn ordinal_alpha_matches_a_hand_computed_case() {
        // Two raters, items (0,0) (0,1) (1,1): coincidences [[2,1],[1,2]],
        // totals 3 and 3, n = 6; the one distance is (6 - 3)^2 = 9, so
        // alpha = 1 - 5 * (2 * 9) / (2 * 3 * 3 * 9) = 4/9 (with two
        // categories, the nominal alpha).
        let items = [vec![0, 0], vec![0, 1], vec![1, 1]];
        let alpha = krippendorff_alpha_ordinal(&tallied(&items, 2)).unwrap();
        assert!((alpha - 4.0 / 9.0).abs() < 1e-12, "{alpha}");
    }

    #[test]
    fn ordinal_alpha_agrees_with_the_naive_form_with_missing_ratings() {
        // Items rated by 1 to 4 raters; the one rated once counts for nothing.
        let items = [
            vec![0, 0],
            vec![1, 2, 2],
            vec![3, 3, 3, 1],
            vec![2],
            vec![0, 1],
            vec![1, 1, 1],
            vec![2, 3, 2],
            vec![0, 3],
        ];
        let alpha = krippendorff_alpha_ordinal(&tallied(&items, 4)).unwrap();
        assert!(
            (alpha - naive_alpha_ordinal(&items, 4)).abs() < 1e-12,
            "{alpha}"
        );
        let without_single: Vec<Vec<usize>> = items
            .iter()
            .filter(|item| item.len() > 1)
            .cloned()
            .collect();
        let same = krippendorff_alpha_ordinal(&tallied(&without_single, 4)).unwrap();
        assert!((alpha - same).abs() < 1e-12);
        // Ordinal: grades far apart in rank disagree more than neighbours.
        let near = krippendorff_alpha_ordinal(&tallied(
            &[vec![0, 1], vec![1, 1], vec![2, 2], vec![0, 0]],
            3,
        ));
        let far = krippendorff_alpha_ordinal(&tallied(
            &[vec![0, 2], vec![1, 1], vec![2, 2], vec![0, 0]],
            3,
        ));
        assert!(near.unwrap() > far.unwrap(), "{near:?} {far:?}");
    }

    #[test]
    fn ordinal_alpha_is_undefined_without_pairs_or_variety() {
        assert_eq!(krippendorff_alpha_ordinal(&[]), None);
        assert_eq!(krippendorff_alpha_ordinal(&[(vec![1, 0], 9)]), None);
        assert_eq!(krippendorff_alpha_ordinal(&[(vec![2, 0], 4)]), None);
        assert_eq!(
            krippendorff_alpha_ordinal(&[(vec![2, 0], 4), (vec![0, 3], 1)]),
            Some(1.0)
        );
    }

    #[test]
    fn fleiss_kappa_is_undefined_without_items_or_variety() {
        assert_eq!(fleiss_kappa(&[]), None);
        assert_eq!(fleiss_kappa(&[(vec![3, 0], 5)]), None);
        assert_eq!(fleiss_kappa(&[(vec![3, 0], 5), (vec![0, 2], 1)]), Some(1.0));
    }
}
