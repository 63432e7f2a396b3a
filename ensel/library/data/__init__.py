"""The training data of a build: labels encoded, folds or a hillclimb split, and data that stays
where it is (a parquet path, a dask DataFrame) checked part by part."""
