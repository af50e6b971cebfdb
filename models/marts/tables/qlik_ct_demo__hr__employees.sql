{{ config(materialized='view') }}
{{ cdc_typed_current_state("qlik_ct_demo", "HR", "EMPLOYEES") }}
